package kubesource

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// TestTransformListenerSet: the slim ListenerSet and Gateway keep what a route attached through
// the ListenerSet is mapped from (the same claims as from the full objects), and drop the rest.
func TestTransformListenerSet(t *testing.T) {
	cfg := source.Config{}
	s := newSlimmer(&cfg)

	gw := newGateway("infra", "gw")
	gw.Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: ptr(gatewayv1.NamespacesFromAll)}}
	gw.Status.Addresses = ipAddresses("192.0.2.1")
	ls := &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "ls",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}, Labels: map[string]string{"x": "y"},
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}", source.AnnotationPrefix + source.TargetAnnotation: "198.51.100.9"}}}
	ls.Spec.ParentRef = gatewayv1.ParentGatewayReference{Name: "gw", Namespace: ptr(gatewayv1.Namespace("infra"))}
	ls.Spec.Listeners = []gatewayv1.ListenerEntry{{
		Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443, Hostname: ptr(gatewayv1.Hostname("*.example.com")),
		TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "cert"}}},
	}}
	ls.Status.Conditions = []metav1.Condition{
		{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", Message: "ok", LastTransitionTime: metav1.Now()},
		{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed"},
		{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs"},
	}
	ls.Status.Listeners = []gatewayv1.ListenerEntryStatus{{Name: "https", AttachedRoutes: 3}}

	got, _ := s.Transform(ls)
	slim := got.(*gatewayv1.ListenerSet)
	if slim.ManagedFields != nil || slim.Labels != nil || slim.Spec.Listeners[0].TLS != nil || slim.Status.Listeners != nil {
		t.Errorf("ListenerSet kept fields the mapping does not read: %+v", slim)
	}
	// The target annotation overrides the Gateway's address (it is read); the rest goes.
	if want := map[string]string{source.AnnotationPrefix + source.TargetAnnotation: "198.51.100.9"}; !reflect.DeepEqual(slim.Annotations, want) {
		t.Errorf("ListenerSet annotations %v, want %v", slim.Annotations, want)
	}
	want := []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue}, {Type: "Programmed", Status: metav1.ConditionTrue}}
	if !reflect.DeepEqual(slim.Status.Conditions, want) {
		t.Errorf("conditions %+v, want %+v", slim.Status.Conditions, want)
	}
	if again, _ := s.Transform(slim); !reflect.DeepEqual(again, slim) {
		t.Errorf("transform is not idempotent")
	}
	slimGW, _ := s.Transform(gw)

	pr := gatewayv1.ParentReference{Name: "ls", Group: ptr(gatewayv1.Group(gatewayv1.GroupName)), Kind: ptr(gatewayv1.Kind(source.KindListenerSet))}
	r := source.Route{Kind: source.KindHTTPRoute, Namespace: "apps", Name: "r", Hostnames: hostnames("a.example.com"),
		ParentRefs: []gatewayv1.ParentReference{pr}, Parents: acceptedBy(pr).Parents}
	claims := func(g *gatewayv1.Gateway, l *gatewayv1.ListenerSet) []source.Claim {
		c, rej := cfg.RouteClaimsWithListenerSets(r,
			func(string, string) (*gatewayv1.Gateway, bool) { return g, true },
			func(string, string) (*gatewayv1.ListenerSet, bool) { return l, true }, nil)
		if rej != nil {
			t.Errorf("rejections: %v", rej)
		}
		return c
	}
	full, small := claims(gw, ls), claims(slimGW.(*gatewayv1.Gateway), slim)
	if len(full) != 1 || !reflect.DeepEqual(full, small) || !reflect.DeepEqual(full[0].Targets, []string{"198.51.100.9"}) {
		t.Errorf("claims from the full objects %+v, from the slim ones %+v", full, small)
	}
}
