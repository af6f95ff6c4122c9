package source

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// GatewayLookup returns a Gateway by namespace and name, ok false when it is not known.
type GatewayLookup func(namespace, name string) (gw *gatewayv1.Gateway, ok bool)

// GatewayRef names a Gateway.
func GatewayRef(gw *gatewayv1.Gateway) record.ObjectRef {
	return record.ObjectRef{Kind: KindGateway, Namespace: gw.Namespace, Name: gw.Name}
}

// selectsGateway applies the Gateway filters: class, name, namespace, labels and the
// controller annotation (read on Gateways too since external-dns v0.23.0). A route attached to
// a Gateway they leave out publishes nothing through it, without a word: that Gateway is
// another controller's business.
func (c *Config) selectsGateway(gw *gatewayv1.Gateway) bool {
	if v, _, ok := c.annotation(gw.Annotations, ControllerAnnotation); ok && v != c.ControllerName {
		return false
	}
	switch {
	case len(c.GatewayClasses) > 0 && !slices.Contains(c.GatewayClasses, string(gw.Spec.GatewayClassName)):
		return false
	case c.GatewayName != "" && gw.Name != c.GatewayName:
		return false
	case c.GatewayNamespace != "" && gw.Namespace != c.GatewayNamespace:
		return false
	case c.GatewayLabelSelector != nil && !c.GatewayLabelSelector.Matches(labels.Set(gw.Labels)):
		return false
	}
	return true
}

// GatewayProgrammed reports whether a Gateway may carry traffic as far as its controller says:
// false only when its Programmed condition is False. A Gateway with no Programmed condition,
// or one that is Unknown, counts as programmed, so that controllers that do not set it keep
// publishing. Names shared by several clusters then answer only the clusters whose Gateway
// works (a health-aware union), and come back when it is Programmed again.
func GatewayProgrammed(gw *gatewayv1.Gateway) bool {
	for _, c := range gw.Status.Conditions {
		if c.Type == string(gatewayv1.GatewayConditionProgrammed) {
			return c.Status != metav1.ConditionFalse
		}
	}
	return true
}

// GatewayTargets returns the targets of the names published through a Gateway, sorted and
// unique: the Gateway's target annotation (comma list) when it is set and not empty,
// otherwise every status.addresses value (IPAddress: an A or AAAA target; Hostname: a CNAME
// target). spec.addresses is never read: it is a request, not a fact. Unusable values are
// reported on the Gateway and left out.
func (c *Config) GatewayTargets(gw *gatewayv1.Gateway) ([]string, []Rejection) {
	rs := newRejections(GatewayRef(gw))
	set := map[string]struct{}{}
	if override, ok := c.annotatedTargets(gw.Annotations, rs); ok {
		return sortedSet(override), rs.sorted()
	}
	for _, a := range gw.Status.Addresses {
		typ := gatewayv1.IPAddressType
		if a.Type != nil {
			typ = *a.Type
		}
		n, isIP, err := normalizeTarget(a.Value)
		switch {
		case typ != gatewayv1.IPAddressType && typ != gatewayv1.HostnameAddressType:
			rs.add("", CauseInvalidTarget, fmt.Sprintf("status address %q has type %s, which cannot be published", a.Value, typ))
		case err != nil:
			rs.add("", CauseInvalidTarget, fmt.Sprintf("status address: %v", err))
		case typ == gatewayv1.IPAddressType && !isIP:
			rs.add("", CauseInvalidTarget, fmt.Sprintf("status address %q of type IPAddress is not an IP address", a.Value))
		case typ == gatewayv1.HostnameAddressType && isIP:
			rs.add("", CauseInvalidTarget, fmt.Sprintf("status address %q of type Hostname is an IP address", a.Value))
		default:
			set[n] = struct{}{}
		}
	}
	return sortedSet(set), rs.sorted()
}

// GatewayRejections returns what is wrong with a Gateway itself (unusable targets, an invalid
// base-domain or steering annotation), to be reported on the Gateway. It is nil for Gateways that the
// GatewayClass filter leaves out.
func (c *Config) GatewayRejections(gw *gatewayv1.Gateway) []Rejection {
	if !c.selectsGateway(gw) {
		return nil
	}
	_, rejected := c.GatewayTargets(gw)
	if _, _, err := c.baseDomain(gw); err != nil {
		rejected = append(rejected, Rejection{Object: GatewayRef(gw), Cause: CauseBaseDomain, Reason: err.Error()})
	}
	if _, err := c.annotationPolicy(gw.Annotations); err != nil {
		rejected = append(rejected, Rejection{Object: GatewayRef(gw), Cause: CauseInvalidAnnotation,
			Reason: steeringRefused(err, " for the names of the routes through it (a route's own steering annotations still apply)")})
	}
	slices.SortFunc(rejected, compareRejections)
	return rejected
}

// baseDomain returns the domain that routes may publish in through gw, when
// BaseDomainFromGateway is on and gw carries the base-domain annotation.
func (c *Config) baseDomain(gw *gatewayv1.Gateway) (domain string, set bool, err error) {
	if !c.BaseDomainFromGateway {
		return "", false, nil
	}
	v, ok := gw.Annotations[BaseDomainAnnotation]
	if !ok {
		return "", false, nil
	}
	d, err := normalizeHostname(v)
	if err == nil && isWildcard(d) {
		err = fmt.Errorf("hostname is a wildcard")
	}
	if err != nil {
		return "", true, fmt.Errorf("annotation %s=%q is not a domain: %v", BaseDomainAnnotation, v, err)
	}
	return d, true, nil
}
