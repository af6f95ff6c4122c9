package source

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// NamespaceLabels returns the labels of a namespace, ok false when it is not known. It is
// needed for listeners with allowedRoutes.namespaces.from: Selector.
type NamespaceLabels func(namespace string) (lbls map[string]string, ok bool)

// routeProtocols lists the listener protocols that accept each route kind.
var routeProtocols = map[string][]gatewayv1.ProtocolType{
	KindHTTPRoute: {gatewayv1.HTTPProtocolType, gatewayv1.HTTPSProtocolType},
	KindGRPCRoute: {gatewayv1.HTTPProtocolType, gatewayv1.HTTPSProtocolType},
	KindTLSRoute:  {gatewayv1.TLSProtocolType},
	KindTCPRoute:  {gatewayv1.TCPProtocolType, gatewayv1.TLSProtocolType},
	KindUDPRoute:  {gatewayv1.UDPProtocolType},
}

// listenerAccepts reports whether listener l, defined in namespace ownerNamespace (by its
// Gateway or ListenerSet), accepts route r through the parent p; when it does not, reason
// says why.
func listenerAccepts(l *gatewayv1.Listener, ownerNamespace string, r *Route, p parent, nsLabels NamespaceLabels) (ok bool, reason string) {
	if p.section != "" && p.section != string(l.Name) {
		return false, "sectionName " + p.section + " names another listener"
	}
	if p.port != 0 && p.port != int32(l.Port) {
		return false, fmt.Sprintf("port %d differs from the listener port %d", p.port, l.Port)
	}
	if !slices.Contains(routeProtocols[r.Kind], l.Protocol) {
		return false, fmt.Sprintf("protocol %s does not accept %s", l.Protocol, r.Kind)
	}
	if ok, reason := namespaceAllowed(l.AllowedRoutes, ownerNamespace, r.Namespace, nsLabels); !ok {
		return false, reason
	}
	if l.AllowedRoutes != nil && len(l.AllowedRoutes.Kinds) > 0 {
		allowed := slices.ContainsFunc(l.AllowedRoutes.Kinds, func(k gatewayv1.RouteGroupKind) bool {
			group := gatewayv1.GroupName
			if k.Group != nil {
				group = string(*k.Group)
			}
			return group == gatewayv1.GroupName && string(k.Kind) == r.Kind
		})
		if !allowed {
			return false, "allowedRoutes.kinds does not include " + r.Kind
		}
	}
	return true, ""
}

// namespaceAllowed applies allowedRoutes.namespaces: from Same (the default), All, Selector
// (against the labels of the route's namespace) or None.
func namespaceAllowed(ar *gatewayv1.AllowedRoutes, gwNamespace, routeNamespace string, nsLabels NamespaceLabels) (bool, string) {
	from := gatewayv1.NamespacesFromSame
	var selector *metav1.LabelSelector
	if ar != nil && ar.Namespaces != nil {
		if ar.Namespaces.From != nil {
			from = *ar.Namespaces.From
		}
		selector = ar.Namespaces.Selector
	}
	switch from {
	case gatewayv1.NamespacesFromAll:
		return true, ""
	case gatewayv1.NamespacesFromSame:
		if gwNamespace == routeNamespace {
			return true, ""
		}
		return false, "allowedRoutes admits only routes from the listener's own namespace " + gwNamespace
	case gatewayv1.NamespacesFromSelector:
		if selector == nil {
			return false, "allowedRoutes.namespaces.from is Selector but no selector is set"
		}
		sel, err := metav1.LabelSelectorAsSelector(selector)
		if err != nil {
			return false, "allowedRoutes.namespaces.selector is invalid: " + err.Error()
		}
		var lbls map[string]string
		found := false
		if nsLabels != nil {
			lbls, found = nsLabels(routeNamespace)
		}
		if !found {
			return false, "namespace " + routeNamespace + " is not known, so allowedRoutes.namespaces.selector cannot match it"
		}
		if !sel.Matches(labels.Set(lbls)) {
			return false, "namespace " + routeNamespace + " does not match allowedRoutes.namespaces.selector"
		}
		return true, ""
	default: // None, or a value this version does not know
		return false, fmt.Sprintf("allowedRoutes.namespaces.from is %s", from)
	}
}
