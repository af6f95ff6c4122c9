// Targets that a Service's EndpointSlices and nodes give: headless and NodePort Services.

package source

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// headlessTargets returns the names a headless Service publishes for its hostname h: h at the
// address of every ready endpoint (every endpoint with spec.publishNotReadyAddresses), and
// "<hostname>.<h>" at the address of each endpoint that has a hostname. An endpoint's first
// address is its address (the EndpointSlice API says the others are for consumers that
// understand them). FQDN slices carry no IP and are left out. A wildcard h has no per-endpoint
// names: "<hostname>.*.<domain>" is not a name.
func headlessTargets(svc *corev1.Service, h string, eps []*discoveryv1.EndpointSlice, rs *rejections) map[string]map[string]struct{} {
	out := map[string]map[string]struct{}{}
	add := func(name, ip string) {
		if out[name] == nil {
			out[name] = map[string]struct{}{}
		}
		out[name][ip] = struct{}{}
	}
	for _, es := range eps {
		if es.AddressType != discoveryv1.AddressTypeIPv4 && es.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		for _, ep := range es.Endpoints {
			if len(ep.Addresses) == 0 || (!svc.Spec.PublishNotReadyAddresses && !isTrue(ep.Conditions.Ready)) {
				continue
			}
			a, err := netip.ParseAddr(ep.Addresses[0])
			if err != nil {
				continue // the API server validates addresses; a bad one is not ours to report
			}
			ip := a.Unmap().String()
			add(h, ip)
			if ep.Hostname != nil && *ep.Hostname != "" && !isWildcard(h) {
				if name, err := normalizeHostname(*ep.Hostname + "." + h); err == nil {
					add(name, ip)
				}
			}
		}
	}
	if len(out[h]) == 0 {
		rs.add(h, CauseNoTargets, "the headless Service has no ready endpoint in its EndpointSlices")
	}
	return out
}

// isTrue reads a condition whose nil means true (Ready, Serving).
func isTrue(b *bool) bool { return b == nil || *b }

// nodePortTargets returns the node addresses a NodePort Service's names point at: every
// schedulable node, or with externalTrafficPolicy Local those running one of its endpoints;
// their ExternalIP addresses, else their InternalIP addresses. The access annotation "public"
// takes ExternalIP addresses only, "private" InternalIP addresses only, of both families. An
// IPv6 InternalIP is not added to the ExternalIPs: external-dns v0.21.0 adds it only with
// --expose-internal-ipv6, off by default, and a migrated name must not gain addresses.
func (c *Config) nodePortTargets(svc *corev1.Service, sc ServiceContext) []string {
	var nodes []*corev1.Node
	if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		nodes = endpointNodes(sc.slicesOf(svc), sc.nodes())
	} else {
		nodes = sc.nodes()
	}
	var external, internal []string
	for _, n := range nodes {
		// Unschedulable (cordoned) nodes are left out, as external-dns does by default
		// (--exclude-unschedulable): they are being drained or repaired.
		if n.Spec.Unschedulable {
			continue
		}
		for _, a := range n.Status.Addresses {
			switch a.Type {
			case corev1.NodeExternalIP:
				external = append(external, a.Address)
			case corev1.NodeInternalIP:
				internal = append(internal, a.Address)
			}
		}
	}
	access, _, _ := c.annotation(svc.Annotations, AccessAnnotation)
	switch {
	case access == "public":
		return external
	case access == "private":
		return internal
	case len(external) > 0:
		return external
	}
	return internal
}

// endpointNodes returns the nodes that run an endpoint of the Service, preferring, as
// kube-proxy does for Local traffic, ready endpoints, then serving terminating ones, then any.
func endpointNodes(eps []*discoveryv1.EndpointSlice, nodes []*corev1.Node) []*corev1.Node {
	const (
		anyEndpoint = iota + 1
		servingTerminating
		ready
	)
	best := map[string]int{}
	top := 0
	for _, es := range eps {
		for _, ep := range es.Endpoints {
			if ep.NodeName == nil || *ep.NodeName == "" {
				continue
			}
			p := anyEndpoint
			switch {
			case isTrue(ep.Conditions.Ready) && !isSet(ep.Conditions.Terminating):
				p = ready
			case isTrue(ep.Conditions.Serving) && isSet(ep.Conditions.Terminating):
				p = servingTerminating
			}
			best[*ep.NodeName] = max(best[*ep.NodeName], p)
			top = max(top, p)
		}
	}
	return slices.DeleteFunc(slices.Clone(nodes), func(n *corev1.Node) bool { return top == 0 || best[n.Name] != top })
}

// isSet reads a condition whose nil means false (Terminating).
func isSet(b *bool) bool { return b != nil && *b }
