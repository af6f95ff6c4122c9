package source

import (
	"fmt"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// IngressRef names an Ingress.
func IngressRef(ing *networkingv1.Ingress) record.ObjectRef {
	return record.ObjectRef{Kind: KindIngress, Namespace: ing.Namespace, Name: ing.Name}
}

// ingressClass returns spec.ingressClassName, falling back to the kubernetes.io/ingress.class
// annotation; "" when neither is set.
func ingressClass(ing *networkingv1.Ingress) string {
	if ing.Spec.IngressClassName != nil && *ing.Spec.IngressClassName != "" {
		return *ing.Spec.IngressClassName
	}
	return ing.Annotations[IngressClassAnnotation]
}

// selectsIngress applies the namespace, label, annotation, controller and IngressClass
// filters. With an IngressClass filter, an Ingress without any class is left out.
func (c *Config) selectsIngress(ing *networkingv1.Ingress) bool {
	if !c.selects(ing.Namespace, ing.Labels, ing.Annotations) {
		return false
	}
	return len(c.IngressClasses) == 0 || slices.Contains(c.IngressClasses, ingressClass(ing))
}

// IngressClaims maps one Ingress to the names it publishes: the hosts of spec.rules[].host,
// spec.tls[].hosts[] and the hostname annotation (the ingress-hostname-source annotation picks
// the spec's alone, defined-hosts-only, or the annotation's alone, annotation-only), within the domain filter, pointing at the
// target annotation when it is set and not empty, else at every status.loadBalancer.ingress[]
// ip and hostname. An Ingress that the filters leave out yields nothing.
func (c *Config) IngressClaims(ing *networkingv1.Ingress) ([]Claim, []Rejection) {
	if !c.selectsIngress(ing) {
		return nil, nil
	}
	ref := IngressRef(ing)
	rs := newRejections(ref)
	ttl := c.ttlFor(ing.Annotations, rs)

	fromSpec, fromAnnotation, bad := c.hostnameSources(ing.Annotations, IngressHostnameSourceAnnotation)
	if bad != "" {
		// external-dns publishes none of the Ingress's names then; so does this, rather
		// than names that the Ingress's owner may have meant to leave out.
		rs.add("", CauseInvalidAnnotation, bad+"; publishing none of the Ingress's names, as external-dns does")
		fromSpec, fromAnnotation = false, false
	}
	var raw []string
	if fromSpec {
		for _, rule := range ing.Spec.Rules {
			if rule.Host != "" { // a rule without host is a catch-all, not a name
				raw = append(raw, rule.Host)
			}
		}
		for _, tls := range ing.Spec.TLS {
			raw = append(raw, tls.Hosts...)
		}
	}
	if v, _, ok := c.annotation(ing.Annotations, HostnameAnnotation); ok && fromAnnotation {
		raw = append(raw, splitList(v)...)
	}
	hosts := validHostnames(raw, rs)
	for _, h := range hosts {
		rs.names(c.concerns(h))
	}

	targets := c.ingressTargets(ing, rs)
	if len(hosts) > 0 && len(targets) == 0 {
		rs.add("", CauseNoTargets, "the Ingress has no usable address in status.loadBalancer.ingress or its target annotation")
	}
	published := map[string]map[string]struct{}{}
	for _, h := range hosts {
		if !c.DomainFilter.Match(h) {
			rs.add(h, CauseDomainFilter, "name is outside the domain filter")
			continue
		}
		if len(targets) > 0 {
			published[h] = targets
		}
	}
	claims := claimsOf(ref, ing.CreationTimestamp.Time, ttl, published)
	steerTargets(claims, c.objectPolicy(ing.Annotations, rs, ""))
	return claims, rs.sorted()
}

// ingressTargets returns the target annotation's targets when it is set and not empty, else
// every status.loadBalancer.ingress[] ip and hostname.
func (c *Config) ingressTargets(ing *networkingv1.Ingress, rs *rejections) map[string]struct{} {
	if override, ok := c.annotatedTargets(ing.Annotations, rs); ok {
		return override
	}
	set := map[string]struct{}{}
	add := func(what, t string) {
		n, _, err := normalizeTarget(t)
		if err != nil {
			rs.add("", CauseInvalidTarget, fmt.Sprintf("%s: %v", what, err))
			return
		}
		set[n] = struct{}{}
	}
	for _, lb := range ing.Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			n, isIP, err := normalizeTarget(lb.IP)
			if err != nil || !isIP {
				rs.add("", CauseInvalidTarget, fmt.Sprintf("status.loadBalancer.ingress ip %q is not an IP address", lb.IP))
			} else {
				set[n] = struct{}{}
			}
		}
		if lb.Hostname != "" {
			add("status.loadBalancer.ingress hostname", lb.Hostname)
		}
	}
	return set
}
