package source

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// KindListenerSet is the kind of a gateway.networking.k8s.io ListenerSet: more listeners for
// an existing Gateway, defined outside it (standard channel from Gateway API v1.5).
const KindListenerSet = "ListenerSet"

// ListenerSetLookup returns a ListenerSet by namespace and name, ok false when it is not known.
type ListenerSetLookup func(namespace, name string) (ls *gatewayv1.ListenerSet, ok bool)

func isListenerSetParent(p parent) bool {
	return p.group == gatewayv1.GroupName && p.kind == KindListenerSet
}

// listenerSetGateway is the parent Gateway of ls, its parentRef with the defaults filled in
// (group gateway.networking.k8s.io, kind Gateway, namespace that of the ListenerSet); ok is
// false when the parentRef names something else than a Gateway.
func listenerSetGateway(ls *gatewayv1.ListenerSet) (p parent, ok bool) {
	ref := ls.Spec.ParentRef
	p = parent{group: gatewayv1.GroupName, kind: KindGateway, namespace: ls.Namespace, name: string(ref.Name)}
	if ref.Group != nil {
		p.group = string(*ref.Group)
	}
	if ref.Kind != nil {
		p.kind = string(*ref.Kind)
	}
	if ref.Namespace != nil && *ref.Namespace != "" {
		p.namespace = string(*ref.Namespace)
	}
	return p, isGatewayParent(p)
}

// ListenerSetAccepted reports whether the ListenerSet's Accepted condition is True: its
// Gateway's controller has attached it. The CRD defaults the condition to Unknown (Pending),
// which does not count.
func ListenerSetAccepted(ls *gatewayv1.ListenerSet) bool {
	return isConditionTrue(ls.Status.Conditions, string(gatewayv1.ListenerSetConditionAccepted))
}

// listenerSetProgrammed is false only when the ListenerSet's Programmed condition is False,
// as GatewayProgrammed is for a Gateway.
func listenerSetProgrammed(ls *gatewayv1.ListenerSet) bool {
	for _, c := range ls.Status.Conditions {
		if c.Type == string(gatewayv1.ListenerSetConditionProgrammed) {
			return c.Status != metav1.ConditionFalse
		}
	}
	return true
}

// attachListenerSet resolves the parent p of r, a ListenerSet, to the Gateway it belongs to and
// the listener entries of the ListenerSet that accept r. The route attaches only through the
// ListenerSet's own listeners (never the Gateway's), with the rules of a Gateway parent: the
// route's status accepts p, sectionName names a listener entry, port, protocol and
// allowedRoutes (Same meaning the ListenerSet's namespace) accept the route. The ListenerSet
// counts only when it is Accepted=True, its Gateway exists, passes the Gateway filters and
// allows ListenerSets from its namespace (spec.allowedListeners). gp is the parent Gateway, as
// the base domain and the Programmed withdrawal come from it, and the targets unless the
// ListenerSet ls has a target annotation (listenerSetTargets).
func (c *Config) attachListenerSet(r *Route, p parent, gateways GatewayLookup, listenerSets ListenerSetLookup, nsLabels NamespaceLabels, rs *rejections) (gw *gatewayv1.Gateway, ls *gatewayv1.ListenerSet, listeners []*gatewayv1.Listener, gp parent, ok bool) {
	if !parentAccepted(r, p) {
		rs.add("", CauseParentNotAccepted, fmt.Sprintf("ListenerSet %s has not accepted the route: status.parents holds no entry for this parentRef with Accepted=True", p))
		return nil, nil, nil, p, false
	}
	if listenerSets != nil {
		ls, ok = listenerSets(p.namespace, p.name)
	}
	if !ok || ls == nil {
		rs.add("", CauseParentNotFound, fmt.Sprintf("ListenerSet %s does not exist", p))
		return nil, nil, nil, p, false
	}
	gp, isGW := listenerSetGateway(ls)
	if !isGW {
		rs.add("", CauseParentNotFound, fmt.Sprintf("ListenerSet %s: its parentRef names a %s.%s, not a Gateway", p, gp.kind, gp.group))
		return nil, nil, nil, p, false
	}
	if gateways != nil {
		gw, ok = gateways(gp.namespace, gp.name)
	}
	if !ok || gw == nil {
		rs.add("", CauseParentNotFound, fmt.Sprintf("Gateway %s of ListenerSet %s does not exist", gp, p))
		return nil, nil, nil, gp, false
	}
	if !c.selectsGateway(gw) {
		return nil, nil, nil, gp, false // another controller's Gateway, as for a Gateway parent
	}
	if !ListenerSetAccepted(ls) {
		rs.add("", CauseParentNotAccepted, fmt.Sprintf("ListenerSet %s is not Accepted=True: Gateway %s has not attached it", p, gp))
		return nil, nil, nil, gp, false
	}
	if allowed, reason := listenersAllowed(gw, ls.Namespace, nsLabels); !allowed {
		rs.add("", CauseParentNotAccepted, fmt.Sprintf("Gateway %s does not allow ListenerSet %s: %s", gp, p, reason))
		return nil, nil, nil, gp, false
	}
	if !listenerSetProgrammed(ls) {
		rs.add("", CauseNotProgrammed, fmt.Sprintf("ListenerSet %s is not Programmed: its names are withdrawn from this cluster until it is", p))
		return nil, nil, nil, gp, false
	}
	var why []string
	for i := range ls.Spec.Listeners {
		l := (*gatewayv1.Listener)(&ls.Spec.Listeners[i]) // the same fields as a Gateway listener
		if accepts, reason := listenerAccepts(l, ls.Namespace, r, p, nsLabels); accepts {
			listeners = append(listeners, l)
		} else {
			why = append(why, "listener "+string(l.Name)+": "+reason)
		}
	}
	if len(listeners) == 0 {
		if len(why) == 0 {
			why = append(why, "the ListenerSet has no listeners")
		}
		rs.add("", CauseNoMatchingListener, fmt.Sprintf("no listener of ListenerSet %s accepts the route: %s", p, strings.Join(why, "; ")))
		return nil, nil, nil, gp, false
	}
	return gw, ls, listeners, gp, true
}

// listenersAllowed applies the Gateway's spec.allowedListeners to a ListenerSet in namespace
// lsNamespace: from None (the default: no ListenerSets), Same, All or Selector. The Gateway's
// controller decides this and says so in the ListenerSet's Accepted condition, which is
// required too; checking it again here withdraws the names as soon as the Gateway's owner
// narrows allowedListeners, instead of when the controller gets round to updating the
// ListenerSet's status (or never, with a controller that does not implement ListenerSets
// but left an old status). Only for Selector with a namespace whose labels are not known (the
// namespaces option may leave it unread) is the ListenerSet's Accepted condition trusted.
func listenersAllowed(gw *gatewayv1.Gateway, lsNamespace string, nsLabels NamespaceLabels) (bool, string) {
	from := gatewayv1.NamespacesFromNone
	var selector *metav1.LabelSelector
	if al := gw.Spec.AllowedListeners; al != nil && al.Namespaces != nil {
		if al.Namespaces.From != nil {
			from = *al.Namespaces.From
		}
		selector = al.Namespaces.Selector
	}
	switch from {
	case gatewayv1.NamespacesFromAll:
		return true, ""
	case gatewayv1.NamespacesFromSame:
		if gw.Namespace == lsNamespace {
			return true, ""
		}
		return false, "allowedListeners admits only ListenerSets from the Gateway's namespace " + gw.Namespace
	case gatewayv1.NamespacesFromSelector:
		if selector == nil {
			return false, "allowedListeners.namespaces.from is Selector but no selector is set"
		}
		sel, err := metav1.LabelSelectorAsSelector(selector)
		if err != nil {
			return false, "allowedListeners.namespaces.selector is invalid: " + err.Error()
		}
		var lbls map[string]string
		found := false
		if nsLabels != nil {
			lbls, found = nsLabels(lsNamespace)
		}
		if found && !sel.Matches(labels.Set(lbls)) {
			return false, "namespace " + lsNamespace + " does not match allowedListeners.namespaces.selector"
		}
		return true, ""
	default: // None, or a value this version does not know
		return false, fmt.Sprintf("allowedListeners.namespaces.from is %s", from)
	}
}

// ListenerSetKey is the key under which a ListenerSet is stored in a client-go cache and
// returned by ParentListenerSetKeys: "namespace/name".
func ListenerSetKey(namespace, name string) string { return namespace + "/" + name }

// ParentListenerSetKeys returns the keys of the ListenerSets that a route names in
// spec.parentRefs, sorted and unique: a cache.IndexFunc, like ParentGatewayKeys, to find the
// routes to recompute when a ListenerSet changes.
func ParentListenerSetKeys(obj any) ([]string, error) {
	r, ok := RouteOf(obj)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, pr := range r.ParentRefs {
		if p := normalizeParent(pr, r.Namespace); isListenerSetParent(p) {
			keys = append(keys, ListenerSetKey(p.namespace, p.name))
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

// ListenerSetGatewayKeys returns the key ("namespace/name") of a ListenerSet's parent Gateway:
// a cache.IndexFunc to find the ListenerSets, and through them the routes, to recompute when a
// Gateway changes. Other objects, and a parentRef that names no Gateway, have no key.
func ListenerSetGatewayKeys(obj any) ([]string, error) {
	ls, ok := obj.(*gatewayv1.ListenerSet)
	if !ok {
		return nil, nil
	}
	if p, isGW := listenerSetGateway(ls); isGW {
		return []string{GatewayKey(p.namespace, p.name)}, nil
	}
	return nil, nil
}

// listenerSetTargets returns the targets of the target annotation of ls, the ListenerSet a
// route attaches through; overridden is false when ls is nil or has no such annotation, and
// the parent Gateway's targets count. external-dns (--gateway-listener-sets) reads it so too: a
// ListenerSet's listeners may be served at addresses of their own (a separate load balancer
// for another team's hostnames). Only a ListenerSet that the Gateway's allowedListeners
// admits gets here, so the Gateway's owner chose who may set it. Unusable entries are
// reported on the route, naming the ListenerSet, and left out.
func (c *Config) listenerSetTargets(ls *gatewayv1.ListenerSet, rs *rejections) ([]string, bool) {
	if ls == nil {
		return nil, false
	}
	own := newRejections(rs.ref)
	set, ok := c.annotatedTargets(ls.Annotations, own)
	for _, r := range own.list {
		rs.add(r.Hostname, r.Cause, fmt.Sprintf("ListenerSet %s: %s", ListenerSetKey(ls.Namespace, ls.Name), r.Reason))
	}
	return sortedSet(set), ok
}
