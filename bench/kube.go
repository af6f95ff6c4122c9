package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// kubeEnv is a kube-apiserver with the Gateway API CRDs (internal/testenv), the fixture that
// plays the gateway controller in it, and a clientset without client-side rate limits.
type kubeEnv struct {
	kube *testenv.Kube
	fx   *gatewayfixture.Cluster
	gw   gwclient.Interface
}

// kubeAPI starts the kube-apiserver on first use; it runs until the end of the run.
func (h *harness) kubeAPI() (*kubeEnv, error) {
	if h.kube != nil {
		return h.kube, nil
	}
	err := catch(func() error {
		start := time.Now()
		k := testenv.StartKubeAPIServer(h.tb)
		rc := rest.CopyConfig(k.Config)
		rc.QPS, rc.Burst = 5000, 10000
		gw, err := gwclient.NewForConfig(rc)
		if err != nil {
			return fmt.Errorf("gateway clientset: %w", err)
		}
		h.kube = &kubeEnv{kube: k, fx: gatewayfixture.New(h.tb, rc), gw: gw}
		logf("kube-apiserver %s in %v (log %s)", k.Config.Host, time.Since(start).Round(time.Millisecond), k.LogFile)
		return nil
	})
	return h.kube, err
}

// setGatewayAddress writes ip as the Gateway's only status address, as its controller would;
// it returns the updated Gateway and when the update was sent.
func (k *kubeEnv) setGatewayAddress(ctx context.Context, g *gatewayv1.Gateway, ip string) (*gatewayv1.Gateway, time.Time, error) {
	ipType := gatewayv1.IPAddressType
	g = g.DeepCopy()
	g.Status.Addresses = []gatewayv1.GatewayStatusAddress{{Type: &ipType, Value: ip}}
	sent := time.Now()
	out, err := k.gw.GatewayV1().Gateways(g.Namespace).UpdateStatus(ctx, g, metav1.UpdateOptions{})
	if err != nil {
		return nil, sent, fmt.Errorf("kube-apiserver: updating the status of Gateway %s/%s: %w", g.Namespace, g.Name, err)
	}
	return out, sent, nil
}

func (k *kubeEnv) gateway(ctx context.Context, namespace, name string) (*gatewayv1.Gateway, error) {
	g, err := k.gw.GatewayV1().Gateways(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver: reading Gateway %s/%s: %w", namespace, name, err)
	}
	return g, nil
}

func (k *kubeEnv) createRoute(ctx context.Context, namespace, name, gwNamespace, gwName, hostname string) error {
	ns := gatewayv1.Namespace(gwNamespace)
	ref := gatewayv1.ParentReference{Namespace: &ns, Name: gatewayv1.ObjectName(gwName)}
	r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	r.Spec.ParentRefs = []gatewayv1.ParentReference{ref}
	r.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(hostname)}
	routes := k.gw.GatewayV1().HTTPRoutes(namespace)
	r, err := routes.Create(ctx, r, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("kube-apiserver: creating HTTPRoute %s/%s: %w", namespace, name, err)
	}
	r.Status.Parents = []gatewayv1.RouteParentStatus{gatewayfixture.Accepted(ref, r.Generation)}
	if _, err := routes.UpdateStatus(ctx, r, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("kube-apiserver: accepting HTTPRoute %s/%s: %w", namespace, name, err)
	}
	return nil
}
