package kubesource

import (
	"errors"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// clientConfig loads a kubeconfig file, with context (the file's current context when "").
func clientConfig(kubeconfig, context string) (*rest.Config, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
}

// RestConfig returns the client configuration of a kubeconfig file and context (the current
// context when context is ""), or the in-cluster configuration when kubeconfig is "".
func RestConfig(kubeconfig, context string) (*rest.Config, error) {
	if kubeconfig == "" {
		if context != "" {
			return nil, errors.New("a kubeconfig context needs a kubeconfig file")
		}
		return rest.InClusterConfig()
	}
	return clientConfig(kubeconfig, context)
}

// The client-side rate limit of the Watcher's clients, unless the configuration sets one. When
// the API server answers again, every informer lists and watches at once: two requests each,
// some twenty with the Gateway API kinds read in all namespaces, more per namespace with the
// namespaces option. client-go's default (5 a second after a burst of 10) made the last of them
// wait over a second, on top of the outage; this lets the recovery through at once. The gates
// keep an outage from being asked often (gate.go), so the limit only shapes bursts.
const (
	recoveryQPS   = 50
	recoveryBurst = 100
)

// withRecoveryRate is rc with the Watcher's rate limit when rc sets none.
func withRecoveryRate(rc *rest.Config) *rest.Config {
	if rc.QPS != 0 || rc.Burst != 0 || rc.RateLimiter != nil {
		return rc
	}
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = recoveryQPS, recoveryBurst
	return rc
}
