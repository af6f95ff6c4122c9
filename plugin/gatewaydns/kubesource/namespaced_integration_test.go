package kubesource

import (
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// shippedNamespacedRBAC is the deploy/ variant for the namespaces option.
const shippedNamespacedRBAC = "../../../deploy/rbac-gatewaydns-namespaced/rbac-gatewaydns-namespaced.yaml"

// applyRBAC creates the Roles, ClusterRoles and their bindings of a YAML file.
func (c *cluster) applyRBAC(file string) {
	c.t.Helper()
	data, err := os.ReadFile(file)
	c.must(err)
	for doc := range strings.SplitSeq(string(data), "\n---\n") {
		var meta metav1.TypeMeta
		c.must(yaml.Unmarshal([]byte(doc), &meta))
		switch meta.Kind {
		case "Role":
			var o rbacv1.Role
			c.must(yaml.UnmarshalStrict([]byte(doc), &o))
			_, err = c.kube.RbacV1().Roles(o.Namespace).Create(c.ctx, &o, metav1.CreateOptions{})
		case "RoleBinding":
			var o rbacv1.RoleBinding
			c.must(yaml.UnmarshalStrict([]byte(doc), &o))
			_, err = c.kube.RbacV1().RoleBindings(o.Namespace).Create(c.ctx, &o, metav1.CreateOptions{})
		case "ClusterRole":
			var o rbacv1.ClusterRole
			c.must(yaml.UnmarshalStrict([]byte(doc), &o))
			_, err = c.kube.RbacV1().ClusterRoles().Create(c.ctx, &o, metav1.CreateOptions{})
		case "ClusterRoleBinding":
			var o rbacv1.ClusterRoleBinding
			c.must(yaml.UnmarshalStrict([]byte(doc), &o))
			_, err = c.kube.RbacV1().ClusterRoleBindings().Create(c.ctx, &o, metav1.CreateOptions{})
		default:
			c.t.Fatalf("%s: unexpected kind %q", file, meta.Kind)
		}
		c.must(err)
	}
}

// TestIntegrationNamespacedRBAC: with the namespaces and gateway-namespace options set, the
// watcher lists and watches only those namespaces, so the identity deploy/ ships for this
// variant (namespaced Roles, and a ClusterRole for its own Namespace objects by name) suffices.
// Every rule of those Roles is used: routes, ListenerSets, Ingresses, Services and their
// EndpointSlices, and DNSEndpoints in team-a are published, a DNSEndpoint's
// status.observedGeneration is written back, Events are created there and patched when a
// rejection comes back; Gateways are read in infra; nothing is read in team-b. Without the
// namespaced informers it would never sync: every list would be cluster-wide, and forbidden.
func TestIntegrationNamespacedRBAC(t *testing.T) {
	c := startCluster(t)
	for _, ns := range []string{"infra", "team-a", "team-b"} {
		c.namespace(ns, map[string]string{"team": ns})
	}
	c.env.InstallDNSEndpointCRD(t)
	dyn, err := dynamic.NewForConfig(c.env.Config)
	c.must(err)
	c.gatewayClass()
	c.gateway(newGateway("infra", "gw",
		listener("http", gatewayv1.HTTPProtocolType, 80, "*.example.com", gatewayv1.NamespacesFromSelector, map[string]string{"team": "team-a"}),
		listener("open", gatewayv1.HTTPProtocolType, 8080, "*.example.com", gatewayv1.NamespacesFromAll, nil),
	), "192.0.2.1")
	gw, open := parentRef("infra", "gw", "http"), parentRef("infra", "gw", "open")
	host := func(h string) map[string]string {
		return map[string]string{source.AnnotationPrefix + source.HostnameAnnotation: h}
	}
	c.httpRoute("team-a", "web", []string{"web.example.com"}, nil, gw)
	c.ingress("team-a", "ing", "ing.example.com", "192.0.2.10")
	c.service("team-a", "lb", corev1.ServiceTypeLoadBalancer, host("lb.example.com"))
	c.loadBalancerStatus("team-a", "lb", "192.0.2.20")
	c.service("team-a", "pods", corev1.ServiceTypeClusterIP, host("pods.example.com"), func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone })
	c.endpointSlice("team-a", "pods", "pods-abc", pod{ip: "10.244.0.1", node: "n1", ready: true})
	_, err = dyn.Resource(source.DNSEndpointGVR).Namespace("team-a").Create(c.ctx,
		dnsEndpointObject("team-a", "records", []any{"crd.example.com", "A", 60, "192.0.2.30"}), metav1.CreateOptions{})
	c.must(err)
	// The same kinds in team-b, outside the namespaces.
	c.httpRoute("team-b", "other", []string{"other.example.com"}, nil, open)
	c.ingress("team-b", "ing", "other-ing.example.com", "192.0.2.11")
	c.service("team-b", "lb", corev1.ServiceTypeLoadBalancer, host("other-lb.example.com"))
	c.loadBalancerStatus("team-b", "lb", "192.0.2.21")
	_, err = dyn.Resource(source.DNSEndpointGVR).Namespace("team-b").Create(c.ctx,
		dnsEndpointObject("team-b", "records", []any{"other-crd.example.com", "A", 60, "192.0.2.31"}), metav1.CreateOptions{})
	c.must(err)

	c.applyRBAC(shippedNamespacedRBAC)
	sa := c.env.UserConfig(t, "system:serviceaccount:kube-system:coredns", "system:serviceaccounts", "system:serviceaccounts:kube-system")

	// NodePort Services are left out: their node addresses are the one cluster-wide read.
	cfg := source.Config{Namespaces: []string{"team-a"}, GatewayNamespace: "infra",
		ServiceTypes: []corev1.ServiceType{corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeClusterIP}}
	w := c.watchAs(sa, cfg, nil, source.KindHTTPRoute, source.KindGRPCRoute, source.KindTLSRoute, source.KindTCPRoute, source.KindUDPRoute,
		source.KindIngress, source.KindService, source.KindDNSEndpoint)
	// Synced needs every informer's list: a single cluster-wide list would be forbidden and
	// hold it back for ever.
	waitSynced(t, w)
	for _, kind := range []string{source.KindDNSEndpoint, source.KindListenerSet, KindEndpointSlice} {
		if _, ok := w.Kinds()[kind]; !ok {
			t.Errorf("%s not watched: %v", kind, w.Kinds())
		}
	}
	if ok, state := endpointIs(w, "web.example.com", "192.0.2.1")(); !ok {
		t.Fatalf("at sync (the Selector listener read team-a's labels): %s", state)
	}
	eventually(t, waitFor, "the Ingress in team-a", endpointIs(w, "ing.example.com", "192.0.2.10"))
	eventually(t, waitFor, "the LoadBalancer Service in team-a", endpointIs(w, "lb.example.com", "192.0.2.20"))
	eventually(t, waitFor, "the headless Service's EndpointSlice in team-a", endpointIs(w, "pods.example.com", "10.244.0.1"))
	eventually(t, waitFor, "the DNSEndpoint in team-a", endpointIs(w, "crd.example.com", "192.0.2.30"))
	eventually(t, waitFor, "the DNSEndpoint's status patched", c.observedGeneration(dyn.Resource(source.DNSEndpointGVR).Namespace("team-a"), "records", 1))
	for _, name := range []string{"other.example.com", "other-ing.example.com", "other-lb.example.com", "other-crd.example.com"} {
		if _, ok := w.Desired().Endpoint(name); ok {
			t.Errorf("%s, in team-b outside the namespaces, was read", name)
		}
	}

	c.httpRoute("team-a", "api", []string{"api.example.com"}, nil, gw)
	eventually(t, waitFor, "a new route in team-a", endpointIs(w, "api.example.com", "192.0.2.1"))

	// A rejection creates an Event; the same rejection again, once fixed and broken, patches it.
	c.httpRoute("team-a", "bad", nil, host("bad_name.example.com"), gw)
	badEvent := func(count int32) func() (bool, string) {
		return func() (bool, string) {
			evs := warningEvents(t, c.kube, "team-a", source.KindHTTPRoute, "bad", string(source.CauseInvalidHostname))
			if len(evs) != 1 {
				return false, fmt.Sprintf("%d InvalidHostname Events", len(evs))
			}
			return evs[0].Count == count, fmt.Sprintf("the Event counted %d times", evs[0].Count)
		}
	}
	eventually(t, waitFor, "the Event on team-a/bad created", badEvent(1))
	c.annotateHTTPRoute("team-a", "bad", host("bad.example.com"))
	eventually(t, waitFor, "team-a/bad fixed", endpointIs(w, "bad.example.com", "192.0.2.1"))
	c.annotateHTTPRoute("team-a", "bad", host("bad_name.example.com"))
	eventually(t, waitFor, "the Event on team-a/bad patched", badEvent(2))

	c.setNamespaceLabels("team-a", map[string]string{"team": "moved"})
	eventually(t, waitFor, "team-a relabelled out of the listener's selector", endpointIs(w, "web.example.com"))
}

// annotateHTTPRoute replaces the annotations of an HTTPRoute.
func (c *cluster) annotateHTTPRoute(namespace, name string, annotations map[string]string) {
	c.t.Helper()
	r, err := c.gw.GatewayV1().HTTPRoutes(namespace).Get(c.ctx, name, metav1.GetOptions{})
	c.must(err)
	r.Annotations = annotations
	_, err = c.gw.GatewayV1().HTTPRoutes(namespace).Update(c.ctx, r, metav1.UpdateOptions{})
	c.must(err)
}
