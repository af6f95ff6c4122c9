package kubesource

import (
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// watcher lists and watches only those namespaces, so an identity with namespaced Roles alone
// (and a ClusterRole for its own Namespace objects, by name): exactly the objects deploy/
// ships for this variant, syncs, publishes the routes,
// Ingresses and Services there, writes Events there, and reads nothing elsewhere. Without the
// namespaced informers it would never sync: every list would be cluster-wide, and forbidden.
func TestIntegrationNamespacedRBAC(t *testing.T) {
	c := startCluster(t)
	for _, ns := range []string{"infra", "team-a", "team-b"} {
		c.namespace(ns, map[string]string{"team": ns})
	}
	c.gatewayClass()
	c.gateway(newGateway("infra", "gw",
		listener("http", gatewayv1.HTTPProtocolType, 80, "*.example.com", gatewayv1.NamespacesFromSelector, map[string]string{"team": "team-a"}),
		listener("open", gatewayv1.HTTPProtocolType, 8080, "*.example.com", gatewayv1.NamespacesFromAll, nil),
	), "192.0.2.1")
	gw, open := parentRef("infra", "gw", "http"), parentRef("infra", "gw", "open")
	c.httpRoute("team-a", "web", []string{"web.example.com"}, nil, gw)
	c.httpRoute("team-b", "other", []string{"other.example.com"}, nil, open)

	c.applyRBAC(shippedNamespacedRBAC)
	sa := c.env.UserConfig(t, "system:serviceaccount:kube-system:coredns", "system:serviceaccounts", "system:serviceaccounts:kube-system")

	// NodePort Services are left out: their node addresses are the one cluster-wide read.
	cfg := source.Config{Namespaces: []string{"team-a"}, GatewayNamespace: "infra",
		ServiceTypes: []corev1.ServiceType{corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeClusterIP}}
	w := c.watchAs(sa, cfg, nil,
		source.KindHTTPRoute, source.KindGRPCRoute, source.KindTLSRoute, source.KindTCPRoute, source.KindUDPRoute, source.KindIngress, source.KindService)
	// Synced needs every informer's list: a single cluster-wide list would be forbidden and
	// hold it back for ever.
	waitSynced(t, w)
	if ok, state := endpointIs(w, "web.example.com", "192.0.2.1")(); !ok {
		t.Fatalf("at sync (the Selector listener read team-a's labels): %s", state)
	}
	if _, ok := w.Desired().Endpoint("other.example.com"); ok {
		t.Errorf("a route in team-b, outside the namespaces, was read")
	}

	c.httpRoute("team-a", "api", []string{"api.example.com"}, nil, gw)
	eventually(t, waitFor, "a new route in team-a", endpointIs(w, "api.example.com", "192.0.2.1"))
	c.httpRoute("team-a", "bad", nil, map[string]string{source.AnnotationPrefix + source.HostnameAnnotation: "bad_name.example.com"}, gw)
	eventually(t, waitFor, "the Event on team-a/bad", func() (bool, string) {
		return len(warningEvents(t, c.kube, "team-a", source.KindHTTPRoute, "bad", string(source.CauseInvalidHostname))) == 1, "InvalidHostname Events"
	})
	c.setNamespaceLabels("team-a", map[string]string{"team": "moved"})
	eventually(t, waitFor, "team-a relabelled out of the listener's selector", endpointIs(w, "web.example.com"))
}
