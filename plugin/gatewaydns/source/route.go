package source

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Route is the part of any Gateway API route kind that the mapping reads.
type Route struct {
	Kind        string // KindHTTPRoute, KindGRPCRoute, KindTLSRoute, KindTCPRoute or KindUDPRoute
	Namespace   string
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	Created     time.Time
	Hostnames   []gatewayv1.Hostname // nil for kinds without hostnames (TCPRoute, UDPRoute)
	ParentRefs  []gatewayv1.ParentReference
	Parents     []gatewayv1.RouteParentStatus
}

// Ref names the route.
func (r *Route) Ref() record.ObjectRef {
	return record.ObjectRef{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

func newRoute(kind string, m *metav1.ObjectMeta, hostnames []gatewayv1.Hostname,
	spec *gatewayv1.CommonRouteSpec, status *gatewayv1.RouteStatus) Route {
	return Route{
		Kind: kind, Namespace: m.Namespace, Name: m.Name,
		Labels: m.Labels, Annotations: m.Annotations, Created: m.CreationTimestamp.Time,
		Hostnames: hostnames, ParentRefs: spec.ParentRefs, Parents: status.Parents,
	}
}

// RouteOf views a route object as a Route. It accepts pointers to the v1 HTTPRoute,
// GRPCRoute, TLSRoute, TCPRoute and UDPRoute and to the v1alpha2 TLSRoute, TCPRoute and
// UDPRoute; ok is false for anything else. The Route shares maps and slices with obj.
func RouteOf(obj any) (r Route, ok bool) {
	switch o := obj.(type) {
	case *gatewayv1.HTTPRoute:
		return newRoute(KindHTTPRoute, &o.ObjectMeta, o.Spec.Hostnames, &o.Spec.CommonRouteSpec, &o.Status.RouteStatus), true
	case *gatewayv1.GRPCRoute:
		return newRoute(KindGRPCRoute, &o.ObjectMeta, o.Spec.Hostnames, &o.Spec.CommonRouteSpec, &o.Status.RouteStatus), true
	case *gatewayv1.TLSRoute:
		return newRoute(KindTLSRoute, &o.ObjectMeta, o.Spec.Hostnames, &o.Spec.CommonRouteSpec, &o.Status.RouteStatus), true
	case *gatewayv1.TCPRoute:
		return newRoute(KindTCPRoute, &o.ObjectMeta, nil, &o.Spec.CommonRouteSpec, &o.Status.RouteStatus), true
	case *gatewayv1.UDPRoute:
		return newRoute(KindUDPRoute, &o.ObjectMeta, nil, &o.Spec.CommonRouteSpec, &o.Status.RouteStatus), true
	case *gatewayv1alpha2.TLSRoute:
		return newRoute(KindTLSRoute, &o.ObjectMeta, o.Spec.Hostnames, &o.Spec.CommonRouteSpec, &o.Status.RouteStatus), true
	case *gatewayv1alpha2.TCPRoute:
		return newRoute(KindTCPRoute, &o.ObjectMeta, nil, &o.Spec.CommonRouteSpec, &o.Status.RouteStatus), true
	case *gatewayv1alpha2.UDPRoute:
		return newRoute(KindUDPRoute, &o.ObjectMeta, nil, &o.Spec.CommonRouteSpec, &o.Status.RouteStatus), true
	case *Route:
		return *o, true
	case Route:
		return o, true
	}
	return Route{}, false
}

// GatewayKey is the key under which a Gateway is stored in a client-go cache and returned by
// ParentGatewayKeys: "namespace/name".
func GatewayKey(namespace, name string) string { return namespace + "/" + name }

// ParentGatewayKeys returns the keys ("namespace/name") of the Gateways that a route names in
// spec.parentRefs, sorted and unique. It has the signature of a client-go cache.IndexFunc, so
// that a caller can find the routes to recompute when a Gateway changes; objects that are not
// routes have no keys (and no error, so an indexer never panics on them).
func ParentGatewayKeys(obj any) ([]string, error) {
	r, ok := RouteOf(obj)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, pr := range r.ParentRefs {
		if p, isGW := gatewayParent(pr, r.Namespace); isGW {
			keys = append(keys, GatewayKey(p.namespace, p.name))
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

// parent is a parentRef with the defaults filled in.
type parent struct {
	group, kind, namespace, name, section string
	port                                  int32 // 0: any
}

func (p parent) String() string { return GatewayKey(p.namespace, p.name) }

// normalizeParent fills in the defaults of a parentRef: group gateway.networking.k8s.io,
// kind Gateway, namespace that of the route.
func normalizeParent(pr gatewayv1.ParentReference, routeNamespace string) parent {
	p := parent{group: gatewayv1.GroupName, kind: KindGateway, namespace: routeNamespace, name: string(pr.Name)}
	if pr.Group != nil {
		p.group = string(*pr.Group) // "" is the core group, as for a Service parent
	}
	if pr.Kind != nil {
		p.kind = string(*pr.Kind)
	}
	if pr.Namespace != nil && *pr.Namespace != "" {
		p.namespace = string(*pr.Namespace)
	}
	if pr.SectionName != nil {
		p.section = string(*pr.SectionName)
	}
	if pr.Port != nil {
		p.port = int32(*pr.Port)
	}
	return p
}

// gatewayParent normalizes pr and reports whether it names a Gateway.
func gatewayParent(pr gatewayv1.ParentReference, routeNamespace string) (parent, bool) {
	p := normalizeParent(pr, routeNamespace)
	return p, isGatewayParent(p)
}

func isGatewayParent(p parent) bool { return p.group == gatewayv1.GroupName && p.kind == KindGateway }

// parentAccepted reports whether the route's status holds an entry for the parent p (the same
// reference, defaults filled in) with condition Accepted=True.
func parentAccepted(r *Route, p parent) bool {
	for i := range r.Parents {
		ps := &r.Parents[i]
		if normalizeParent(ps.ParentRef, r.Namespace) == p &&
			isConditionTrue(ps.Conditions, string(gatewayv1.RouteConditionAccepted)) {
			return true
		}
	}
	return false
}

func isConditionTrue(conds []metav1.Condition, typ string) bool {
	for _, c := range conds {
		if c.Type == typ {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
