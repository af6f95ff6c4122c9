// The sample objects: what a gateway controller, an ingress controller and a cloud provider
// would leave behind in each cluster, and the waits for their names.

package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
)

// applySamples creates the sample objects of a cluster, with their status set, and returns the
// names they publish and the names that must be refused.
func applySamples(cluster string, rc *rest.Config) ([]nameInfo, []refusedInfo, error) {
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	gw, err := gwclient.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, ns := range []string{"infra", "shop"} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return nil, nil, err
		}
	}
	domain := cluster + "." + zone
	switch cluster {
	case "eu1":
		if err := createGateway(ctx, gw, "public", gatewayv1.HTTPProtocolType, 80, "*."+domain, "203.0.113.10"); err != nil {
			return nil, nil, err
		}
		if err := createGateway(ctx, gw, "passthrough", gatewayv1.TLSProtocolType, 443, "*."+domain, "203.0.113.11"); err != nil {
			return nil, nil, err
		}
		if err := createHTTPRoute(ctx, gw, "web", "public", "web."+domain); err != nil {
			return nil, nil, err
		}
		if err := createTLSRoute(ctx, gw, "db", "passthrough", "db."+domain); err != nil {
			return nil, nil, err
		}
		if err := createIngress(ctx, kube, "legacy", "legacy."+domain, "203.0.113.12"); err != nil {
			return nil, nil, err
		}
		if err := createLoadBalancerService(ctx, kube, "mqtt", "mqtt."+domain, "203.0.113.13"); err != nil {
			return nil, nil, err
		}
		if err := createDNSEndpoint(ctx, rc, "vpn."+domain, "203.0.113.14"); err != nil {
			return nil, nil, err
		}
		return []nameInfo{
			{"web." + domain, "203.0.113.10"}, {"db." + domain, "203.0.113.11"}, {"legacy." + domain, "203.0.113.12"},
			{"mqtt." + domain, "203.0.113.13"}, {"vpn." + domain, "203.0.113.14"},
		}, nil, nil
	default:
		// Its listener takes any hostname: only gatewaydns's domain filter keeps this cluster
		// inside its own subdomain.
		if err := createGateway(ctx, gw, "public", gatewayv1.HTTPProtocolType, 80, "", "198.51.100.10"); err != nil {
			return nil, nil, err
		}
		if err := createHTTPRoute(ctx, gw, "api", "public", "api."+domain); err != nil {
			return nil, nil, err
		}
		if err := createIngress(ctx, kube, "shop", "shop."+domain, "198.51.100.20"); err != nil {
			return nil, nil, err
		}
		if err := createHTTPRoute(ctx, gw, "hijack", "public", "hijack.eu1."+zone); err != nil {
			return nil, nil, err
		}
		return []nameInfo{{"api." + domain, "198.51.100.10"}, {"shop." + domain, "198.51.100.20"}},
			[]refusedInfo{{Name: "hijack.eu1." + zone, Why: cluster + "'s HTTPRoute shop/hijack asks for a name in eu1's subdomain: refused (Warning Event DomainFilter on the route), never answered"}},
			nil
	}
}

func createGateway(ctx context.Context, gw gwclient.Interface, name string, protocol gatewayv1.ProtocolType, port int32, hostname, address string) error {
	l := gatewayfixture.Listener(protocol, port, hostname)
	if protocol == gatewayv1.TLSProtocolType {
		mode := gatewayv1.TLSModePassthrough
		l.TLS = &gatewayv1.ListenerTLSConfig{Mode: &mode}
	}
	g := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: name},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: "demo", Listeners: []gatewayv1.Listener{l}},
	}
	g, err := gw.GatewayV1().Gateways("infra").Create(ctx, g, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("Gateway infra/%s: %w", name, err)
	}
	return setGatewayAddress(ctx, gw, g, address)
}

func setGatewayAddress(ctx context.Context, gw gwclient.Interface, g *gatewayv1.Gateway, address string) error {
	ipType := gatewayv1.IPAddressType
	g.Status.Addresses = []gatewayv1.GatewayStatusAddress{{Type: &ipType, Value: address}}
	if _, err := gw.GatewayV1().Gateways(g.Namespace).UpdateStatus(ctx, g, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("Gateway %s/%s status: %w", g.Namespace, g.Name, err)
	}
	return nil
}

func parentRef(gateway string) gatewayv1.ParentReference {
	ns := gatewayv1.Namespace("infra")
	return gatewayv1.ParentReference{Namespace: &ns, Name: gatewayv1.ObjectName(gateway)}
}

func accepted(ref gatewayv1.ParentReference, generation int64) []gatewayv1.RouteParentStatus {
	return []gatewayv1.RouteParentStatus{gatewayfixture.AcceptedBy(controller, ref, generation)}
}

func createHTTPRoute(ctx context.Context, gw gwclient.Interface, name, gateway, hostname string) error {
	ref := parentRef(gateway)
	r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
	r.Spec.ParentRefs = []gatewayv1.ParentReference{ref}
	r.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(hostname)}
	r, err := gw.GatewayV1().HTTPRoutes("shop").Create(ctx, r, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("HTTPRoute shop/%s: %w", name, err)
	}
	r.Status.Parents = accepted(ref, r.Generation)
	if _, err := gw.GatewayV1().HTTPRoutes("shop").UpdateStatus(ctx, r, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("HTTPRoute shop/%s status: %w", name, err)
	}
	return nil
}

func createTLSRoute(ctx context.Context, gw gwclient.Interface, name, gateway, hostname string) error {
	ref := parentRef(gateway)
	port := gatewayv1.PortNumber(5432)
	r := &gatewayv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
	r.Spec.ParentRefs = []gatewayv1.ParentReference{ref}
	r.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(hostname)}
	r.Spec.Rules = []gatewayv1.TLSRouteRule{{BackendRefs: []gatewayv1.BackendRef{{
		BackendObjectReference: gatewayv1.BackendObjectReference{Name: "db", Port: &port},
	}}}}
	r, err := gw.GatewayV1().TLSRoutes("shop").Create(ctx, r, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("TLSRoute shop/%s: %w", name, err)
	}
	r.Status.Parents = accepted(ref, r.Generation)
	if _, err := gw.GatewayV1().TLSRoutes("shop").UpdateStatus(ctx, r, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("TLSRoute shop/%s status: %w", name, err)
	}
	return nil
}

// createDNSEndpoint creates external-dns's DNSEndpoint for a name that no other object
// describes: an A record, and a TXT record beside it.
func createDNSEndpoint(ctx context.Context, rc *rest.Config, host, ip string) error {
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
		"metadata": map[string]any{"namespace": "shop", "name": "vpn"},
		"spec": map[string]any{"endpoints": []any{
			map[string]any{"dnsName": host, "recordType": "A", "targets": []any{ip}},
			map[string]any{"dnsName": host, "recordType": "TXT", "targets": []any{"owner=network-team"}},
		}},
	}}
	gvr := schema.GroupVersionResource{Group: "externaldns.k8s.io", Version: "v1alpha1", Resource: "dnsendpoints"}
	if _, err := dyn.Resource(gvr).Namespace("shop").Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("DNSEndpoint shop/vpn: %w", err)
	}
	return nil
}

// createLoadBalancerService creates a LoadBalancer Service named in external-dns's hostname
// annotation and gives it the address a cloud provider would.
func createLoadBalancerService(ctx context.Context, kube kubernetes.Interface, name, host, ip string) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name,
			Annotations: map[string]string{"external-dns.kubernetes.io/hostname": host}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "mqtts", Port: 8883, Protocol: corev1.ProtocolTCP}}},
	}
	svc, err := kube.CoreV1().Services("shop").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("Service shop/%s: %w", name, err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	if _, err := kube.CoreV1().Services("shop").UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("Service shop/%s status: %w", name, err)
	}
	return nil
}

func createIngress(ctx context.Context, kube kubernetes.Interface, name, host, ip string) error {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: host}}}}
	ing, err := kube.NetworkingV1().Ingresses("shop").Create(ctx, ing, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("Ingress shop/%s: %w", name, err)
	}
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: ip}}
	if _, err := kube.NetworkingV1().Ingresses("shop").UpdateStatus(ctx, ing, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("Ingress shop/%s status: %w", name, err)
	}
	return nil
}

// setAddress changes the address of Gateway infra/public in a running demo's cluster, as its
// controller would after its load balancer changed.
func (d *demo) setAddress(cluster, address string) error {
	if net.ParseIP(address) == nil {
		return fmt.Errorf("%q is not an IP address", address)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", d.path(cluster+".kubeconfig"))
	if err != nil {
		return fmt.Errorf("cluster %s: %v (is the demo running? make demo)", cluster, err)
	}
	gw, err := gwclient.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := gw.GatewayV1().Gateways("infra").Get(ctx, "public", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("cluster %s: %v (is the demo running? make demo)", cluster, err)
	}
	if err := setGatewayAddress(ctx, gw, g, address); err != nil {
		return err
	}
	fmt.Printf("cluster %s: Gateway infra/public now has address %s\n", cluster, address)
	return nil
}

// waitAnswer asks 127.0.0.1:port for name until the answer is exactly want.
func waitAnswer(port int, name, want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), dns.TypeA)
		r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1 {
			if a, ok := r.Answer[0].(*dns.A); ok && a.A.String() == want {
				return nil
			}
		}
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("%s %v", dns.RcodeToString[r.Rcode], r.Answer)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("127.0.0.1:%d does not answer %s with %s after %s (last: %s)", port, name, want, timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitRefusal waits for the Warning Event on the refused route.
func waitRefusal(rc *rest.Config, r refusedInfo) error {
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := kube.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
		if err == nil {
			for _, e := range list.Items {
				if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == "hijack" && e.Reason == "DomainFilter" {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no DomainFilter Warning Event on HTTPRoute shop/hijack (asking for %s) after 30s", r.Name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
