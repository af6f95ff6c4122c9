package source

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// RouteClaims maps one route to the names it publishes. For each spec.parentRefs entry that
// names a Gateway, the route counts only when its status holds an Accepted=True entry for
// that same reference, the Gateway exists and passes the GatewayClass filter, and some
// listener accepts the route (sectionName, port, protocol, allowedRoutes). The route's
// hostnames (spec.hostnames and the hostname annotation; when it has none, the listener's
// hostname) are intersected with each accepting listener's hostname, filtered by the domain
// filter and the Gateway's base domain, and point at the Gateway's targets. A route that the
// namespace, label, annotation or controller filters leave out yields nothing.
//
// Rejections are reported on the route; problems of the Gateway itself are not repeated here
// (see GatewayRejections).
func (c *Config) RouteClaims(r Route, gateways GatewayLookup, nsLabels NamespaceLabels) ([]Claim, []Rejection) {
	return c.RouteClaimsWithListenerSets(r, gateways, nil, nsLabels)
}

// RouteClaimsWithListenerSets is RouteClaims for routes that may also attach through
// ListenerSets (parentRefs of kind ListenerSet, see attachListenerSet); listenerSets nil
// knows none, so that such a parent is reported as not found.
func (c *Config) RouteClaimsWithListenerSets(r Route, gateways GatewayLookup, listenerSets ListenerSetLookup, nsLabels NamespaceLabels) ([]Claim, []Rejection) {
	if !c.selects(r.Namespace, r.Labels, r.Annotations) {
		return nil, nil
	}
	ref := r.Ref()
	rs := newRejections(ref)
	ttl := c.ttlFor(r.Annotations, rs)
	own := c.objectPolicy(r.Annotations, rs, " (a Gateway's steering annotations still apply to the names through it)")

	hosts, asked := c.routeHostnames(&r, rs)
	candidates := hosts
	if !asked {
		candidates = []string{""} // inherit each accepting listener's hostname
	}

	published := map[string]map[string]struct{}{} // name -> targets
	steering := routeSteering{own: own, of: map[string]Policy{}, via: map[string]parent{}}
	matched := map[string]bool{} // candidate -> intersects an accepting listener
	accepting := false
	for _, pr := range r.ParentRefs {
		p := normalizeParent(pr, r.Namespace)
		var gw *gatewayv1.Gateway
		var ls *gatewayv1.ListenerSet
		var listeners []*gatewayv1.Listener
		ok := false
		switch {
		case isGatewayParent(p):
			gw, listeners, ok = c.attach(&r, p, gateways, nsLabels, rs)
		case isListenerSetParent(p):
			gw, ls, listeners, p, ok = c.attachListenerSet(&r, p, gateways, listenerSets, nsLabels, rs)
		default:
			continue // a mesh (Service) or other parent: not a DNS matter
		}
		if !ok {
			continue
		}
		accepting = true
		if names := intersectListeners(candidates, listeners, matched); len(names) > 0 {
			steering.add(c, gw, p, c.publishThrough(gw, ls, p, names, published, rs), rs)
		}
	}

	if accepting {
		if asked {
			for _, h := range hosts {
				if !matched[h] {
					rs.add(h, CauseNoMatchingHostname, "hostname matches no hostname of the listeners that accept the route")
				}
			}
		} else if !matched[""] {
			rs.add("", CauseNoMatchingHostname, "the route has no hostnames and none of the listeners that accept it has one")
		}
	}
	claims := claimsOf(ref, r.Created, ttl, published)
	for i := range claims {
		claims[i].Policy = steering.of[claims[i].Name]
	}
	return claims, rs.sorted()
}

// routeSteering is the steering of each name a route publishes: the route's own annotations
// over those of the Gateway of the first parentRef that publishes the name. A later parent
// whose Gateway gives the name another policy is reported on the route.
type routeSteering struct {
	own Policy
	of  map[string]Policy
	via map[string]parent
}

func (rs *routeSteering) add(c *Config, gw *gatewayv1.Gateway, p parent, names []string, rej *rejections) {
	st := rs.own.over(c.gatewayPolicy(gw))
	for _, n := range names {
		first, seen := rs.via[n]
		switch {
		case !seen:
			rs.of[n], rs.via[n] = st, p
		case rs.of[n] != st:
			rej.add(n, CauseConflict, fmt.Sprintf("the name comes through Gateways %s (%s) and %s (%s), whose steering annotations differ; publishing it with the first parentRef's",
				first, rs.of[n], p, st))
		}
	}
}

// attach resolves the parent p of r to its Gateway and the listeners that accept r. ok is
// false when r does not attach through p; the reason is reported, except for a Gateway that
// the GatewayClass filter leaves out (not ours).
func (c *Config) attach(r *Route, p parent, gateways GatewayLookup, nsLabels NamespaceLabels, rs *rejections) (gw *gatewayv1.Gateway, listeners []*gatewayv1.Listener, ok bool) {
	if !parentAccepted(r, p) {
		rs.add("", CauseParentNotAccepted, fmt.Sprintf("Gateway %s has not accepted the route: status.parents holds no entry for this parentRef with Accepted=True", p))
		return nil, nil, false
	}
	if gateways != nil {
		gw, ok = gateways(p.namespace, p.name)
	}
	if !ok || gw == nil {
		rs.add("", CauseParentNotFound, fmt.Sprintf("Gateway %s does not exist", p))
		return nil, nil, false
	}
	if !c.selectsGateway(gw) {
		return nil, nil, false
	}
	var why []string
	for i := range gw.Spec.Listeners {
		l := &gw.Spec.Listeners[i]
		if accepts, reason := listenerAccepts(l, gw.Namespace, r, p, nsLabels); accepts {
			listeners = append(listeners, l)
		} else {
			why = append(why, "listener "+string(l.Name)+": "+reason)
		}
	}
	if len(listeners) == 0 {
		if len(why) == 0 {
			why = append(why, "the Gateway has no listeners")
		}
		rs.add("", CauseNoMatchingListener, fmt.Sprintf("no listener of Gateway %s accepts the route: %s", p, strings.Join(why, "; ")))
		return nil, nil, false
	}
	return gw, listeners, true
}

// intersectListeners intersects every candidate hostname ("" for none) with every listener's
// hostname and marks the candidates that gave a name.
func intersectListeners(candidates []string, listeners []*gatewayv1.Listener, matched map[string]bool) []string {
	var names []string
	for _, l := range listeners {
		lh := ""
		if l.Hostname != nil && *l.Hostname != "" && !ignoresHostname(l.Protocol) {
			var err error
			if lh, err = normalizeHostname(string(*l.Hostname)); err != nil {
				continue // the API server validates listener hostnames; skip a bad one
			}
		}
		for _, h := range candidates {
			if n, ok := intersectHostnames(h, lh); ok {
				matched[h] = true
				names = append(names, n)
			}
		}
	}
	return names
}

// ignoresHostname reports whether a listener protocol ignores the listener hostname, as the
// Gateway API defines for TCP and UDP (and its validation forbids setting one there).
func ignoresHostname(p gatewayv1.ProtocolType) bool {
	return p == gatewayv1.TCPProtocolType || p == gatewayv1.UDPProtocolType
}

// publishThrough points the names that pass the domain filter and gw's base domain at gw's
// targets (those of the target annotation of ls, the ListenerSet the route attaches through,
// when it has one), reporting the others. It returns the names it published.
func (c *Config) publishThrough(gw *gatewayv1.Gateway, ls *gatewayv1.ListenerSet, p parent, names []string, published map[string]map[string]struct{}, rs *rejections) (through []string) {
	for _, n := range names {
		rs.names(c.concerns(n))
	}
	if !GatewayProgrammed(gw) {
		rs.add("", CauseNotProgrammed, fmt.Sprintf("Gateway %s is not Programmed: its names are withdrawn from this cluster until it is", p))
		return nil
	}
	targets, overridden := c.listenerSetTargets(ls, rs)
	if !overridden {
		targets, _ = c.GatewayTargets(gw)
	}
	if len(targets) == 0 {
		rs.add("", CauseNoTargets, fmt.Sprintf("Gateway %s has no usable address in status.addresses or its target annotation", p))
		return nil
	}
	base, hasBase, baseErr := c.baseDomain(gw)
	for _, n := range names {
		switch {
		case !c.DomainFilter.Match(n):
			rs.add(n, CauseDomainFilter, "name is outside the domain filter")
		case baseErr != nil:
			rs.add(n, CauseBaseDomain, fmt.Sprintf("Gateway %s: %v", p, baseErr))
		case hasBase && !inDomain(n, base):
			rs.add(n, CauseBaseDomain, fmt.Sprintf("name is outside the base domain %s of Gateway %s", base, p))
		default:
			if published[n] == nil {
				published[n] = map[string]struct{}{}
			}
			for _, t := range targets {
				published[n][t] = struct{}{}
			}
			through = append(through, n)
		}
	}
	return through
}

// routeHostnames returns the route's valid hostnames, normalized and unique, reporting invalid
// ones; asked says whether the route names any hostname at all, valid or not: only a route
// that names none inherits the listeners' hostnames. The gateway-hostname-source annotation
// picks the sources as external-dns does: absent, spec.hostnames then the hostname
// annotation; annotation-only, the hostname annotation alone; defined-hosts-only,
// spec.hostnames alone. Under either value a route never inherits a listener's hostname: it
// asked for its names to come from one place, and that place is empty.
func (c *Config) routeHostnames(r *Route, rs *rejections) (hosts []string, asked bool) {
	fromSpec, fromAnnotation, bad := c.hostnameSources(r.Annotations, GatewayHostnameSourceAnnotation)
	if bad != "" { // external-dns warns and reads the route as if the annotation were absent
		rs.add("", CauseInvalidAnnotation, bad+"; reading the route as if it were absent")
	}
	raw := make([]string, 0, len(r.Hostnames))
	if fromSpec {
		for _, h := range r.Hostnames {
			raw = append(raw, string(h))
		}
	}
	if v, _, ok := c.annotation(r.Annotations, HostnameAnnotation); ok && fromAnnotation {
		raw = append(raw, splitList(v)...)
	}
	return validHostnames(raw, rs), len(raw) > 0 || !fromSpec || !fromAnnotation
}

// validHostnames normalizes hostnames, dropping duplicates and reporting invalid ones.
func validHostnames(raw []string, rs *rejections) []string {
	var hosts []string
	for _, h := range raw {
		n, err := normalizeHostname(h)
		if err != nil {
			rs.add(strings.TrimSpace(h), CauseInvalidHostname, err.Error())
			continue
		}
		if !slices.Contains(hosts, n) {
			hosts = append(hosts, n)
		}
	}
	return hosts
}

// claimsOf turns name -> targets into Claims sorted by name.
func claimsOf(ref record.ObjectRef, created time.Time, ttl uint32, published map[string]map[string]struct{}) []Claim {
	if len(published) == 0 {
		return nil
	}
	claims := make([]Claim, 0, len(published))
	for _, n := range slices.Sorted(maps.Keys(published)) {
		claims = append(claims, Claim{Name: n, Targets: sortedSet(published[n]), TTL: ttl, Source: ref, Created: created})
	}
	return claims
}

func sortedSet(set map[string]struct{}) []string {
	if len(set) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(set))
}
