package kubesource

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// A route keeps its parentRefs without the values that mean the default, and of each parent's
// status its Accepted condition only; the mapping finds the same names through it, and a
// change of what it dropped is no change.
func TestTransformShrinksRoutesToWhatTheMappingReads(t *testing.T) {
	cfg := source.Config{}
	s := newSlimmer(&cfg)
	gw := newGateway("apps", "gw", listener("http", gatewayv1.HTTPProtocolType, 80, "*.example.com", gatewayv1.NamespacesFromAll, nil))
	gw.Status.Addresses = ipAddresses("192.0.2.1")
	gw.Status.Conditions = []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue}}
	infra := newGateway("infra", "shared", listener("web", gatewayv1.HTTPProtocolType, 80, "*.example.com", gatewayv1.NamespacesFromAll, nil))
	infra.Status.Addresses = ipAddresses("192.0.2.2")
	infra.Status.Conditions = gw.Status.Conditions
	lookup := func(ns, name string) (*gatewayv1.Gateway, bool) {
		switch {
		case ns == "apps" && name == "gw":
			return gw, true
		case ns == "infra" && name == "shared":
			return infra, true
		}
		return nil, false
	}

	// As the API server stores it: group and kind filled in, one parent in the route's own
	// namespace named explicitly, one elsewhere through a listener.
	same := parentRef("apps", "gw", "")
	same.Group, same.Kind = ptr(gatewayv1.Group(gatewayv1.GroupName)), ptr(gatewayv1.Kind("Gateway"))
	elsewhere := parentRef("infra", "shared", "web")
	elsewhere.Group, elsewhere.Kind = same.Group, same.Kind
	st := acceptedBy(same, elsewhere)
	st.Parents[0].Conditions = append([]metav1.Condition{{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs"}}, st.Parents[0].Conditions...)
	route := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{same, elsewhere}},
			Hostnames:       hostnames("web.example.com"),
		},
		Status: gatewayv1.HTTPRouteStatus{RouteStatus: st},
	}
	got, _ := s.Transform(route)
	slim := got.(*gatewayv1.HTTPRoute)

	wantRefs := []gatewayv1.ParentReference{{Name: "gw"},
		{Name: "shared", Namespace: ptr(gatewayv1.Namespace("infra")), SectionName: ptr(gatewayv1.SectionName("web"))}}
	if !reflect.DeepEqual(slim.Spec.ParentRefs, wantRefs) {
		t.Errorf("parentRefs = %+v, want %+v", slim.Spec.ParentRefs, wantRefs)
	}
	wantConds := []metav1.Condition{{Type: string(gatewayv1.RouteConditionAccepted), Status: metav1.ConditionTrue}}
	for i, p := range slim.Status.Parents {
		if !reflect.DeepEqual(p.ParentRef, wantRefs[i]) || !reflect.DeepEqual(p.Conditions, wantConds) || p.ControllerName != "" {
			t.Errorf("status.parents[%d] = %+v, want ref %+v and conditions %+v", i, p, wantRefs[i], wantConds)
		}
	}
	full, _ := source.RouteOf(route)
	small, _ := source.RouteOf(slim)
	c1, r1 := cfg.RouteClaims(full, lookup, nil)
	c2, r2 := cfg.RouteClaims(small, lookup, nil)
	if len(c1) != 1 || len(c1[0].Targets) != 2 || !reflect.DeepEqual(c1, c2) || !reflect.DeepEqual(r1, r2) {
		t.Errorf("mapping differs on the slim route, or found not both Gateways:\n%v %v\n%v %v", c1, r1, c2, r2)
	}
	k1, _ := source.ParentGatewayKeys(route)
	k2, _ := source.ParentGatewayKeys(slim)
	if !reflect.DeepEqual(k1, k2) {
		t.Errorf("gateway index keys %v on the slim route, %v on the route", k2, k1)
	}
	if again, _ := s.Transform(slim); !reflect.DeepEqual(again, slim) {
		t.Errorf("transform is not idempotent:\n%+v\n%+v", again, slim)
	}

	// The controller rewrites a condition it does not publish by: nothing to do.
	changed := route.DeepCopy()
	changed.ResourceVersion = "2"
	changed.Status.Parents[0].Conditions[0].Status = metav1.ConditionFalse
	changed.Status.Parents[1].Conditions[0].LastTransitionTime = metav1.Now()
	slimChanged, _ := s.Transform(changed)
	if !sameContent(slim, slimChanged) {
		t.Errorf("a change of ResolvedRefs and of a timestamp counts as a change")
	}
	changed.Status.Parents[0].Conditions[1].Status = metav1.ConditionFalse
	slimChanged, _ = s.Transform(changed)
	if sameContent(slim, slimChanged) {
		t.Errorf("a change of Accepted counts as no change")
	}
}

// Routes decoded one by one (as from a list) share their namespace and their parents' names
// and namespaces after the transform, instead of holding a copy each.
func TestTransformSharesTheStringsRoutesHaveInCommon(t *testing.T) {
	s := newSlimmer(&source.Config{})
	var slim []*gatewayv1.HTTPRoute
	for i := range 2 {
		var r gatewayv1.HTTPRoute
		if err := json.Unmarshal(fmt.Appendf(nil, benchRouteJSON, i, i, i, i, 0, 0), &r); err != nil {
			t.Fatal(err)
		}
		r.Spec.ParentRefs[0].Namespace = ptr(gatewayv1.Namespace("infra")) // a Gateway elsewhere
		got, _ := s.Transform(&r)
		slim = append(slim, got.(*gatewayv1.HTTPRoute))
	}
	a, b := slim[0], slim[1]
	for what, pair := range map[string][2]string{
		"namespace":         {a.Namespace, b.Namespace},
		"parent name":       {string(a.Spec.ParentRefs[0].Name), string(b.Spec.ParentRefs[0].Name)},
		"parent namespace":  {string(*a.Spec.ParentRefs[0].Namespace), string(*b.Spec.ParentRefs[0].Namespace)},
		"status parent ref": {string(a.Status.Parents[0].ParentRef.Name), string(b.Spec.ParentRefs[0].Name)},
	} {
		if pair[0] != pair[1] || unsafe.StringData(pair[0]) != unsafe.StringData(pair[1]) {
			t.Errorf("%s: %q and %q are two copies", what, pair[0], pair[1])
		}
	}
	if &a.Status.Parents[0].Conditions[0] != &b.Status.Parents[0].Conditions[0] {
		t.Errorf("the Accepted conditions are two copies")
	}
}

// TestTransformKeepsTheAnnotationPrefixesRead: the slim objects keep the external-dns
// annotations under the prefixes the stanza reads (annotation-prefix) and drop the others.
func TestTransformKeepsTheAnnotationPrefixesRead(t *testing.T) {
	annots := map[string]string{
		"dns.example.org/hostname":                         "mine.example.com",
		source.AnnotationPrefix + "hostname":               "theirs.example.com",
		source.LegacyAnnotationPrefix + "hostname":         "legacy.example.com",
		"kubectl.kubernetes.io/last-applied-configuration": "{}",
	}
	for _, tc := range []struct {
		name     string
		prefixes []string
		want     []string
	}{
		{name: "default: both standard prefixes", want: []string{source.AnnotationPrefix + "hostname", source.LegacyAnnotationPrefix + "hostname"}},
		{name: "annotation-prefix: that prefix only", prefixes: []string{"dns.example.org/"}, want: []string{"dns.example.org/hostname"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSlimmer(&source.Config{AnnotationPrefixes: tc.prefixes})
			route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", Annotations: annots}}
			got, _ := s.Transform(route)
			var kept []string
			for k := range got.(*gatewayv1.HTTPRoute).Annotations {
				kept = append(kept, k)
			}
			slices.Sort(kept)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(kept, want) {
				t.Errorf("kept %v, want %v", kept, want)
			}
		})
	}
}
