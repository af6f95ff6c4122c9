package kubesource

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// TestTransformKeepsWhatSteeringReads: the slim objects keep the steering annotations of a
// Gateway and a route, and of a DNSEndpoint entry its set identifier and the providerSpecific
// properties and labels steering reads (and nothing else of them), so that the mapping gives
// the slim objects the policy it gives the full ones.
func TestTransformKeepsWhatSteeringReads(t *testing.T) {
	cfg := source.Config{}
	s := newSlimmer(&cfg)

	gw := newGateway("infra", "gw", listener("http", gatewayv1.HTTPProtocolType, 80, "*.example.com", gatewayv1.NamespacesFromAll, nil))
	gw.Annotations = map[string]string{source.PriorityAnnotation: "1", "other.io/x": "y"}
	gw.Status.Addresses = ipAddresses("192.0.2.1")
	route := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "web", Annotations: map[string]string{
			source.WeightAnnotation: "90", source.HealthCheckAnnotation: "tcp://:443",
			source.AnnotationPrefix + source.SetIdentifierAnnotation: "eu1", "note": "x"}},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{parentRef("infra", "gw", "")}},
			Hostnames:       hostnames("web.example.com"),
		},
		Status: gatewayv1.HTTPRouteStatus{RouteStatus: acceptedBy(parentRef("infra", "gw", ""))},
	}
	got, _ := s.Transform(gw)
	slimGW := got.(*gatewayv1.Gateway)
	got, _ = s.Transform(route)
	slimRoute := got.(*gatewayv1.HTTPRoute)
	if want := map[string]string{source.PriorityAnnotation: "1"}; !reflect.DeepEqual(slimGW.Annotations, want) {
		t.Errorf("Gateway annotations %v, want %v", slimGW.Annotations, want)
	}
	if len(slimRoute.Annotations) != 3 {
		t.Errorf("route annotations %v", slimRoute.Annotations)
	}
	full, _ := source.RouteOf(route)
	small, _ := source.RouteOf(slimRoute)
	c1, _ := cfg.RouteClaims(full, func(string, string) (*gatewayv1.Gateway, bool) { return gw, true }, nil)
	c2, _ := cfg.RouteClaims(small, func(string, string) (*gatewayv1.Gateway, bool) { return slimGW, true }, nil)
	if len(c1) != 1 || c1[0].Policy.String() != "weight 90, priority 1, health check tcp://:443" || !reflect.DeepEqual(c1, c2) {
		t.Errorf("claims differ on the slim objects or miss the policy:\n%+v\n%+v", c1, c2)
	}

	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": source.KindDNSEndpoint,
		"metadata": map[string]any{"namespace": "dns", "name": "records", "annotations": map[string]any{source.PriorityAnnotation: "2"}},
		"spec": map[string]any{"endpoints": []any{map[string]any{
			"dnsName": "app.example.com", "recordType": "A", "targets": []any{"192.0.2.1"}, "setIdentifier": "eu1",
			"labels":           map[string]any{source.HealthCheckAnnotation: "tcp://:80", "owner": "someone"},
			"providerSpecific": []any{map[string]any{"name": source.AWSWeightProperty, "value": "40"}, map[string]any{"name": "alias", "value": "true"}},
		}}},
	}}
	fullDE, err := source.DNSEndpointFromUnstructured(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = s.Transform(u)
	slimDE := got.(*source.DNSEndpoint)
	e := slimDE.Spec.Endpoints[0]
	if e.SetIdentifier != "eu1" || len(e.ProviderSpecific) != 1 || len(e.Labels) != 1 {
		t.Errorf("slim entry %+v: want the set identifier, aws/weight and the health-check label alone", e)
	}
	c1, _ = cfg.DNSEndpointClaims(fullDE)
	c2, _ = cfg.DNSEndpointClaims(slimDE)
	if len(c1) != 1 || c1[0].Policy.String() != "weight 40, priority 2, health check tcp://:80" || !reflect.DeepEqual(c1, c2) {
		t.Errorf("DNSEndpoint claims differ on the slim object or miss the policy:\n%+v\n%+v", c1, c2)
	}
}
