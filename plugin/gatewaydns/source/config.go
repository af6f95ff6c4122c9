package source

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Config holds the filters and defaults of one gatewaydns stanza. The zero value selects every
// object and publishes every valid name with the plugin default TTL (0).
type Config struct {
	// Namespaces limits routes, Ingresses and Services to these namespaces; empty means all
	// (kubesource then lists and watches only these namespaces). Gateways are not filtered by
	// namespace: routes may attach to a Gateway in another namespace (see GatewayNamespace).
	Namespaces []string
	// LabelSelector selects routes and Ingresses by their labels; nil selects all.
	LabelSelector labels.Selector
	// AnnotationFilter selects routes and Ingresses by their annotations, as external-dns's
	// --annotation-filter does; nil selects all.
	AnnotationFilter labels.Selector
	// GatewayClasses limits the Gateways used to these spec.gatewayClassName values; empty
	// means all.
	GatewayClasses []string
	// GatewayName, GatewayNamespace and GatewayLabelSelector limit the Gateways used to the one
	// of that name, those of that namespace, and those whose labels match, as external-dns's
	// --gateway-name, --gateway-namespace and --gateway-label-filter do; empty or nil: all.
	GatewayName          string
	GatewayNamespace     string
	GatewayLabelSelector labels.Selector
	// IngressClasses limits Ingresses to these classes (spec.ingressClassName, else the
	// kubernetes.io/ingress.class annotation); empty means all.
	IngressClasses []string
	// ServiceTypes limits Services to these types, as external-dns's --service-type-filter
	// does; empty means all.
	ServiceTypes []corev1.ServiceType
	// PublishInternal publishes the cluster IPs of ClusterIP Services at the names of their
	// hostname annotation, as external-dns's --publish-internal-services does. Without it only
	// the internal-hostname annotation names cluster IPs.
	PublishInternal bool
	// ControllerName is this controller's name: a route or Ingress whose controller
	// annotation is set to anything else belongs to another controller and is skipped.
	ControllerName string
	// DefaultTTL is the TTL of names whose object has no valid ttl annotation; 0 means the
	// plugin default.
	DefaultTTL uint32
	// DomainFilter limits the names published.
	DomainFilter DomainFilter
	// Zones are the stanza's zones (zero: every name). An object naming a hostname in them and
	// not excluded by DomainFilter is meant for this DNS: its problems are reported, also for
	// names the filter refuses (a route asking for another cluster's subdomain). An object
	// naming none (a public name for another external-dns, an excluded domain) belongs to
	// another controller and gets no Events.
	Zones DomainFilter
	// AnnotationPrefixes are the prefixes of the external-dns annotations read, the first
	// that holds an annotation winning; empty means DefaultAnnotationPrefixes. external-dns
	// v0.22's --annotation-prefix (one prefix) and v0.23's --enable-legacy-annotation-prefix
	// (that prefix, then the legacy one) map onto it.
	AnnotationPrefixes []string
	// BaseDomainFromGateway makes a Gateway's dns.openmcp.cloud/base-domain annotation a
	// domain filter for the routes attached to it: through that Gateway a route may only
	// publish names equal to or under the base domain. Gateways without the annotation
	// add no restriction.
	BaseDomainFromGateway bool
}

// selects reports whether a route or Ingress passes the namespace, label, annotation and
// controller filters. Objects that fail are not ours: they yield no claims and no rejections.
func (c *Config) selects(namespace string, lbls, annots map[string]string) bool {
	if len(c.Namespaces) > 0 && !slices.Contains(c.Namespaces, namespace) {
		return false
	}
	if c.LabelSelector != nil && !c.LabelSelector.Matches(labels.Set(lbls)) {
		return false
	}
	if c.AnnotationFilter != nil && !c.AnnotationFilter.Matches(labels.Set(annots)) {
		return false
	}
	if v, _, ok := c.annotation(annots, ControllerAnnotation); ok && v != c.ControllerName {
		return false
	}
	return true
}

// concerns reports whether a hostname is meant for this DNS (see Config.Zones).
func (c *Config) concerns(name string) bool {
	return c.DomainFilter.Match(name) || (c.Zones.Match(name) && !c.DomainFilter.Excludes(name))
}
