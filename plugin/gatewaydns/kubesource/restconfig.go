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
