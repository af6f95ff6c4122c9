// The transform of routes: a cluster may hold 100k of them, so each keeps what the mapping
// reads and as little of it as its own copy as can be.

package kubesource

import (
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// intern returns the one copy of s that the caches share. The decoder gives every object its
// own copy of each string; a namespace or a Gateway's name is the same in thousands of routes.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// slimCommon keeps the parentRefs, each without its defaults.
func slimCommon(c gatewayv1.CommonRouteSpec, routeNamespace string) gatewayv1.CommonRouteSpec {
	if len(c.ParentRefs) == 0 {
		return gatewayv1.CommonRouteSpec{}
	}
	refs := make([]gatewayv1.ParentReference, len(c.ParentRefs))
	for i, pr := range c.ParentRefs {
		refs[i] = slimParentRef(pr, routeNamespace)
	}
	return gatewayv1.CommonRouteSpec{ParentRefs: refs}
}

// slimParentRef is pr with the values that mean the default left out: group
// gateway.networking.k8s.io, kind Gateway, the route's own namespace (the API server fills the
// first two in; source.normalizeParent fills all three in again), and its strings interned.
// Each was a pointer and a string of the route's own.
func slimParentRef(pr gatewayv1.ParentReference, routeNamespace string) gatewayv1.ParentReference {
	out := gatewayv1.ParentReference{Name: gatewayv1.ObjectName(intern(string(pr.Name))), Port: pr.Port}
	if pr.Group != nil && *pr.Group != gatewayv1.GroupName {
		g := gatewayv1.Group(intern(string(*pr.Group)))
		out.Group = &g
	}
	if pr.Kind != nil && *pr.Kind != source.KindGateway {
		k := gatewayv1.Kind(intern(string(*pr.Kind)))
		out.Kind = &k
	}
	if pr.Namespace != nil && *pr.Namespace != "" && string(*pr.Namespace) != routeNamespace {
		ns := gatewayv1.Namespace(intern(string(*pr.Namespace)))
		out.Namespace = &ns
	}
	if pr.SectionName != nil {
		sn := gatewayv1.SectionName(intern(string(*pr.SectionName)))
		out.SectionName = &sn
	}
	return out
}

// slimRouteStatus keeps, for each parent, the reference (as slimParentRef) and the type and
// status of its Accepted condition, the one condition the mapping reads (the first of that
// type, as source reads it): a change of another condition, of a reason or of a timestamp
// wakes nothing.
func slimRouteStatus(st gatewayv1.RouteStatus, routeNamespace string) gatewayv1.RouteStatus {
	if len(st.Parents) == 0 {
		return gatewayv1.RouteStatus{}
	}
	out := gatewayv1.RouteStatus{Parents: make([]gatewayv1.RouteParentStatus, len(st.Parents))}
	for i, p := range st.Parents {
		ps := gatewayv1.RouteParentStatus{ParentRef: slimParentRef(p.ParentRef, routeNamespace)}
		for _, c := range p.Conditions {
			if c.Type == string(gatewayv1.RouteConditionAccepted) {
				ps.Conditions = acceptedCondition(c.Status)
				break
			}
		}
		out.Parents[i] = ps
	}
	return out
}

// acceptedTrue, acceptedFalse and acceptedUnknown are the conditions of a route's parent status
// after the transform, for each status: shared by the routes' cached objects, which nobody
// writes to (client-go's rule for the objects of a cache; sameContent changes copies).
var (
	acceptedTrue    = []metav1.Condition{{Type: string(gatewayv1.RouteConditionAccepted), Status: metav1.ConditionTrue}}
	acceptedFalse   = []metav1.Condition{{Type: string(gatewayv1.RouteConditionAccepted), Status: metav1.ConditionFalse}}
	acceptedUnknown = []metav1.Condition{{Type: string(gatewayv1.RouteConditionAccepted), Status: metav1.ConditionUnknown}}
)

// acceptedCondition is the conditions of a parent status whose Accepted condition has status s.
func acceptedCondition(s metav1.ConditionStatus) []metav1.Condition {
	switch s {
	case metav1.ConditionTrue:
		return acceptedTrue
	case metav1.ConditionFalse:
		return acceptedFalse
	case metav1.ConditionUnknown:
		return acceptedUnknown
	}
	return []metav1.Condition{{Type: string(gatewayv1.RouteConditionAccepted), Status: s}}
}

// route is Transform of the route kinds; ok is false for other objects.
func (s *slimmer) route(obj any) (any, bool) {
	switch o := obj.(type) {
	case *gatewayv1beta1.HTTPRoute: // the v1 type under another name: stored as v1
		return s.route((*gatewayv1.HTTPRoute)(o))
	case *gatewayv1.Gateway:
		return s.gateway(o), true
	case *gatewayv1.ListenerSet:
		return s.listenerSet(o), true
	case *gatewayv1.HTTPRoute:
		return &gatewayv1.HTTPRoute{ObjectMeta: s.routeMeta(&o.ObjectMeta),
			Spec:   gatewayv1.HTTPRouteSpec{CommonRouteSpec: slimCommon(o.Spec.CommonRouteSpec, o.Namespace), Hostnames: o.Spec.Hostnames},
			Status: gatewayv1.HTTPRouteStatus{RouteStatus: slimRouteStatus(o.Status.RouteStatus, o.Namespace)}}, true
	case *gatewayv1.GRPCRoute:
		return &gatewayv1.GRPCRoute{ObjectMeta: s.routeMeta(&o.ObjectMeta),
			Spec:   gatewayv1.GRPCRouteSpec{CommonRouteSpec: slimCommon(o.Spec.CommonRouteSpec, o.Namespace), Hostnames: o.Spec.Hostnames},
			Status: gatewayv1.GRPCRouteStatus{RouteStatus: slimRouteStatus(o.Status.RouteStatus, o.Namespace)}}, true
	case *gatewayv1.TLSRoute:
		return &gatewayv1.TLSRoute{ObjectMeta: s.routeMeta(&o.ObjectMeta),
			Spec:   gatewayv1.TLSRouteSpec{CommonRouteSpec: slimCommon(o.Spec.CommonRouteSpec, o.Namespace), Hostnames: o.Spec.Hostnames},
			Status: gatewayv1.TLSRouteStatus{RouteStatus: slimRouteStatus(o.Status.RouteStatus, o.Namespace)}}, true
	case *gatewayv1.TCPRoute:
		return &gatewayv1.TCPRoute{ObjectMeta: s.routeMeta(&o.ObjectMeta),
			Spec:   gatewayv1.TCPRouteSpec{CommonRouteSpec: slimCommon(o.Spec.CommonRouteSpec, o.Namespace)},
			Status: gatewayv1.TCPRouteStatus{RouteStatus: slimRouteStatus(o.Status.RouteStatus, o.Namespace)}}, true
	case *gatewayv1.UDPRoute:
		return &gatewayv1.UDPRoute{ObjectMeta: s.routeMeta(&o.ObjectMeta),
			Spec:   gatewayv1.UDPRouteSpec{CommonRouteSpec: slimCommon(o.Spec.CommonRouteSpec, o.Namespace)},
			Status: gatewayv1.UDPRouteStatus{RouteStatus: slimRouteStatus(o.Status.RouteStatus, o.Namespace)}}, true
	case *gatewayv1alpha2.TLSRoute:
		out := &gatewayv1alpha2.TLSRoute{ObjectMeta: s.routeMeta(&o.ObjectMeta)}
		out.Spec.CommonRouteSpec = slimCommon(o.Spec.CommonRouteSpec, o.Namespace)
		out.Spec.Hostnames = o.Spec.Hostnames
		out.Status.RouteStatus = slimRouteStatus(o.Status.RouteStatus, o.Namespace)
		return out, true
	case *gatewayv1alpha2.TCPRoute:
		out := &gatewayv1alpha2.TCPRoute{ObjectMeta: s.routeMeta(&o.ObjectMeta)}
		out.Spec.CommonRouteSpec = slimCommon(o.Spec.CommonRouteSpec, o.Namespace)
		out.Status.RouteStatus = slimRouteStatus(o.Status.RouteStatus, o.Namespace)
		return out, true
	case *gatewayv1alpha2.UDPRoute:
		out := &gatewayv1alpha2.UDPRoute{ObjectMeta: s.routeMeta(&o.ObjectMeta)}
		out.Spec.CommonRouteSpec = slimCommon(o.Spec.CommonRouteSpec, o.Namespace)
		out.Status.RouteStatus = slimRouteStatus(o.Status.RouteStatus, o.Namespace)
		return out, true
	}
	return nil, false
}
