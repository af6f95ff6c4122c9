package source

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Service annotations (after the prefix), besides hostname, target and ttl.
const (
	// InternalHostnameAnnotation: names that point at the Service's cluster IPs (a LoadBalancer
	// or ClusterIP Service), reachable only from inside the cluster network.
	InternalHostnameAnnotation = "internal-hostname"
	// AccessAnnotation: "public" or "private", which node addresses a NodePort Service's names
	// point at.
	AccessAnnotation = "access"
)

// ServiceContext is what the mapping of a Service reads besides the Service: its EndpointSlices
// (headless Services, and NodePort Services with externalTrafficPolicy Local) and the nodes
// (NodePort Services). A nil function reads as none.
type ServiceContext struct {
	// EndpointSlices returns the EndpointSlices labelled kubernetes.io/service-name=name.
	EndpointSlices func(namespace, name string) []*discoveryv1.EndpointSlice
	// Nodes returns every node.
	Nodes func() []*corev1.Node
}

func (sc ServiceContext) slicesOf(svc *corev1.Service) []*discoveryv1.EndpointSlice {
	if sc.EndpointSlices == nil {
		return nil
	}
	return sc.EndpointSlices(svc.Namespace, svc.Name)
}

func (sc ServiceContext) nodes() []*corev1.Node {
	if sc.Nodes == nil {
		return nil
	}
	return sc.Nodes()
}

// ServiceRef names a Service.
func ServiceRef(svc *corev1.Service) record.ObjectRef {
	return record.ObjectRef{Kind: KindService, Namespace: svc.Namespace, Name: svc.Name}
}

// selectsService applies the namespace, label, annotation and controller filters and the
// Service type filter.
func (c *Config) selectsService(svc *corev1.Service) bool {
	if !c.selects(svc.Namespace, svc.Labels, svc.Annotations) {
		return false
	}
	return len(c.ServiceTypes) == 0 || slices.Contains(c.ServiceTypes, serviceType(svc))
}

// serviceType is spec.type, ClusterIP when unset (the API server defaults it).
func serviceType(svc *corev1.Service) corev1.ServiceType {
	if svc.Spec.Type == "" {
		return corev1.ServiceTypeClusterIP
	}
	return svc.Spec.Type
}

// ServiceClaims maps one Service to the names it publishes, as external-dns's service source
// does: the names of the hostname annotation point at the Service's external addresses, those
// of the internal-hostname annotation at its cluster IPs. Which addresses depends on the type:
//
//   - LoadBalancer: spec.externalIPs when set, else every status.loadBalancer.ingress ip (A/AAAA)
//     and hostname (CNAME); internal names: the cluster IPs.
//   - ClusterIP: the cluster IPs, for internal names (and, with PublishInternal, for the
//     hostname annotation too); a headless Service (clusterIP None): the addresses of its ready
//     endpoints, and per endpoint with a hostname (a pod with spec.hostname and
//     spec.subdomain = the Service) the name "<hostname>.<name>" with that endpoint's address.
//   - NodePort: the nodes' ExternalIP addresses, else their InternalIP addresses (the access
//     annotation picks one side); with externalTrafficPolicy Local only the nodes that run an
//     endpoint, the ready ones first; and an SRV record per node port (nodePortSRV).
//   - ExternalName: spec.externalIPs when set, else spec.externalName (CNAME).
//
// The target annotation, when set and not empty, overrides all of these. Where external-dns is
// wrong this deviates: every cluster IP of a dual-stack Service is published (external-dns
// publishes spec.clusterIP alone), and per-endpoint names come from the EndpointSlice's
// hostname, which Kubernetes sets only for pods whose subdomain names the Service (external-dns
// reads spec.hostname of any selected pod, so a pod of another Service's StatefulSet can take a
// name).
func (c *Config) ServiceClaims(svc *corev1.Service, sc ServiceContext) ([]Claim, []Rejection) {
	if !c.selectsService(svc) {
		return nil, nil
	}
	ref := ServiceRef(svc)
	rs := newRejections(ref)
	ttl := c.ttlFor(svc.Annotations, rs)

	hostnames := c.annotatedHostnames(svc.Annotations, HostnameAnnotation, rs)
	internal := c.annotatedHostnames(svc.Annotations, InternalHostnameAnnotation, rs)
	all := append(slices.Clone(hostnames), internal...)
	for _, h := range all {
		rs.names(c.concerns(h))
	}
	published := publishedNames{filter: c.DomainFilter, rs: rs, names: map[string]map[string]struct{}{}}

	override, overridden := c.annotatedTargets(svc.Annotations, rs)
	headless := !overridden && svc.Spec.ClusterIP == corev1.ClusterIPNone && serviceType(svc) == corev1.ServiceTypeClusterIP
	var endpointSlices []*discoveryv1.EndpointSlice
	if headless {
		endpointSlices = sc.slicesOf(svc)
	}
	for _, names := range []struct {
		list     []string
		internal bool
	}{{hostnames, false}, {internal, true}} {
		// Every name of a list points at the same targets, but a headless Service's (which
		// has names of its own per endpoint).
		targets := override
		if !overridden && !headless && len(names.list) > 0 {
			targets = c.serviceTargets(svc, names.internal, sc, rs)
		}
		for _, h := range names.list {
			if headless {
				for name, targets := range headlessTargets(svc, h, endpointSlices, rs) {
					published.add(name, targets)
				}
				continue
			}
			if len(targets) == 0 && !overridden {
				rs.add(h, CauseNoTargets, noTargetsReason(svc, names.internal, c.PublishInternal))
			}
			published.add(h, targets)
		}
	}
	claims := claimsOf(ref, svc.CreationTimestamp.Time, ttl, published.names)
	steerTargets(claims, c.objectPolicy(svc.Annotations, rs, ""))
	if serviceType(svc) == corev1.ServiceTypeNodePort && !overridden {
		for _, h := range all {
			claims = append(claims, c.nodePortSRV(svc, h, ttl, rs)...)
		}
		slices.SortFunc(claims, func(a, b Claim) int { return cmp.Compare(a.Name, b.Name) })
	}
	return claims, rs.sorted()
}

// publishedNames are the names a Service publishes, with their targets: those the domain
// filter lets through (the others rejected).
type publishedNames struct {
	filter DomainFilter
	rs     *rejections
	names  map[string]map[string]struct{}
}

// add publishes targets at name; no targets publish nothing.
func (p publishedNames) add(name string, targets map[string]struct{}) {
	if len(targets) == 0 {
		return
	}
	if !p.filter.Match(name) {
		p.rs.add(name, CauseDomainFilter, "name is outside the domain filter")
		return
	}
	if p.names[name] == nil {
		p.names[name] = map[string]struct{}{}
	}
	for t := range targets {
		p.names[name][t] = struct{}{}
	}
}

// nodePortSRV returns the SRV records external-dns publishes for a NodePort Service's name h:
// per port with a node port, "_<service>._<protocol>.<h>" SRV 0 50 <node port> <h>. A
// wildcard h has none ("_svc._tcp.*.domain" is not a name).
func (c *Config) nodePortSRV(svc *corev1.Service, h string, ttl uint32, rs *rejections) []Claim {
	if isWildcard(h) {
		return nil
	}
	var out []Claim
	for _, p := range svc.Spec.Ports {
		if p.NodePort <= 0 || p.NodePort > 65535 {
			continue
		}
		proto := strings.ToLower(string(p.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		name := "_" + svc.Name + "._" + proto + "." + h
		if !c.DomainFilter.Match(name) {
			rs.add(name, CauseDomainFilter, "name is outside the domain filter")
			continue
		}
		out = append(out, Claim{Name: name, Records: []record.Typed{record.SRV(0, 50, uint16(p.NodePort), h)},
			TTL: ttl, Source: ServiceRef(svc), Created: svc.CreationTimestamp.Time})
	}
	return out
}

// annotatedHostnames returns the valid names of a hostname-like annotation (comma list).
func (c *Config) annotatedHostnames(annots map[string]string, name string, rs *rejections) []string {
	v, _, ok := c.annotation(annots, name)
	if !ok {
		return nil
	}
	return validHostnames(splitList(v), rs)
}

// serviceTargets returns the targets of a non-headless Service's names.
func (c *Config) serviceTargets(svc *corev1.Service, internal bool, sc ServiceContext, rs *rejections) map[string]struct{} {
	t := targetSet{set: map[string]struct{}{}, rs: rs}
	switch serviceType(svc) {
	case corev1.ServiceTypeLoadBalancer:
		loadBalancerTargets(svc, internal, t)
	case corev1.ServiceTypeClusterIP:
		if internal || c.PublishInternal {
			t.ips("spec.clusterIPs", clusterIPs(svc))
		}
	case corev1.ServiceTypeNodePort:
		t.ips("node address", c.nodePortTargets(svc, sc))
	case corev1.ServiceTypeExternalName:
		if len(svc.Spec.ExternalIPs) > 0 {
			t.ips("spec.externalIPs", svc.Spec.ExternalIPs)
			break
		}
		if svc.Spec.ExternalName != "" {
			// An IP address here is published as an A/AAAA record, as external-dns does.
			t.host("spec.externalName", svc.Spec.ExternalName)
		}
	}
	return t.set
}

// loadBalancerTargets adds the targets of a LoadBalancer Service's names to t: its cluster IPs
// for the internal names, else its external IPs, else its load balancers' addresses and names.
func loadBalancerTargets(svc *corev1.Service, internal bool, t targetSet) {
	switch {
	case internal:
		t.ips("spec.clusterIPs", clusterIPs(svc))
	case len(svc.Spec.ExternalIPs) > 0:
		t.ips("spec.externalIPs", svc.Spec.ExternalIPs)
	default:
		for _, lb := range svc.Status.LoadBalancer.Ingress {
			if lb.IP != "" {
				t.ips("status.loadBalancer.ingress ip", []string{lb.IP})
			}
			if lb.Hostname != "" {
				t.host("status.loadBalancer.ingress hostname", lb.Hostname)
			}
		}
	}
}

// targetSet collects a Service's targets, and rejects those its fields hold wrongly.
type targetSet struct {
	set map[string]struct{}
	rs  *rejections
}

// ips adds the addresses of the field what; anything else there is rejected.
func (t targetSet) ips(what string, ips []string) {
	for _, ip := range ips {
		n, isIP, err := normalizeTarget(ip)
		if err != nil || !isIP {
			t.rs.add("", CauseInvalidTarget, fmt.Sprintf("%s %q is not an IP address", what, ip))
			continue
		}
		t.set[n] = struct{}{}
	}
}

// host adds the host name (or address) of the field what, unless it is invalid.
func (t targetSet) host(what, host string) {
	n, _, err := normalizeTarget(host)
	if err != nil {
		t.rs.add("", CauseInvalidTarget, fmt.Sprintf("%s: %v", what, err))
		return
	}
	t.set[n] = struct{}{}
}

// clusterIPs returns every cluster IP of a Service (both families of a dual-stack one);
// none for a headless Service.
func clusterIPs(svc *corev1.Service) []string {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	return slices.DeleteFunc(slices.Clone(ips), func(ip string) bool { return ip == "" || ip == corev1.ClusterIPNone })
}

// noTargetsReason says why a Service's name has nothing to point at, in the user's terms.
func noTargetsReason(svc *corev1.Service, internal, publishInternal bool) string {
	switch serviceType(svc) {
	case corev1.ServiceTypeLoadBalancer:
		if internal {
			return "the LoadBalancer Service has no cluster IP"
		}
		return "the LoadBalancer Service has no address in status.loadBalancer.ingress yet (or its target annotation)"
	case corev1.ServiceTypeClusterIP:
		if !internal && !publishInternal {
			return "a ClusterIP Service is reachable only inside the cluster: name it in the internal-hostname annotation, or set the publish-internal-services option"
		}
		return "the ClusterIP Service has no cluster IP"
	case corev1.ServiceTypeNodePort:
		return "no node address to publish for the NodePort Service (no nodes, none matching the access annotation, or, with externalTrafficPolicy Local, no node running an endpoint)"
	case corev1.ServiceTypeExternalName:
		return "the ExternalName Service has neither spec.externalName nor spec.externalIPs"
	}
	return fmt.Sprintf("Services of type %q are not published", svc.Spec.Type)
}
