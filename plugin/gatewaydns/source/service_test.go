package source

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// service builds Service app/svc of type typ annotated with kv.
func service(typ corev1.ServiceType, kv ...string) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "svc", CreationTimestamp: metav1.NewTime(t0)}}
	svc.Spec.Type = typ
	if typ != corev1.ServiceTypeExternalName {
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
	}
	if len(kv) > 0 {
		svc.Annotations = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			svc.Annotations[kv[i]] = kv[i+1]
		}
	}
	return svc
}

// withLB sets status.loadBalancer.ingress: "ip" or "host:name" entries.
func withLB(svc *corev1.Service, lb ...string) *corev1.Service {
	for _, a := range lb {
		if h, ok := strings.CutPrefix(a, "host:"); ok {
			svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{Hostname: h})
		} else {
			svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: a})
		}
	}
	return svc
}

func withSpec(svc *corev1.Service, f func(*corev1.ServiceSpec)) *corev1.Service {
	f(&svc.Spec)
	return svc
}

func headless(kv ...string) *corev1.Service {
	return withSpec(service(corev1.ServiceTypeClusterIP, kv...), func(s *corev1.ServiceSpec) {
		s.ClusterIP, s.ClusterIPs = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
	})
}

// endpoint is one EndpointSlice endpoint: its address, hostname ("" none), node, whether its
// pod is ready and whether it is terminating. Its conditions are set as the EndpointSlice
// controller sets them (serving: the pod is ready; ready: serving and not terminating), except
// those named in unset, left nil as another writer may leave them.
type endpoint struct {
	addr, hostname, node string
	ready, terminating   bool
	unset                string // conditions left nil: "ready", "serving", "terminating", space separated
}

func slice(family discoveryv1.AddressType, eps ...endpoint) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{AddressType: family}
	for _, e := range eps {
		d := discoveryv1.Endpoint{Addresses: []string{e.addr},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(e.ready && !e.terminating), Serving: ptr(e.ready), Terminating: ptr(e.terminating)}}
		for _, c := range strings.Fields(e.unset) {
			switch c {
			case "ready":
				d.Conditions.Ready = nil
			case "serving":
				d.Conditions.Serving = nil
			case "terminating":
				d.Conditions.Terminating = nil
			default:
				panic("unknown endpoint condition " + c)
			}
		}
		if e.hostname != "" {
			d.Hostname = ptr(e.hostname)
		}
		if e.node != "" {
			d.NodeName = ptr(e.node)
		}
		es.Endpoints = append(es.Endpoints, d)
	}
	return es
}

// node builds a node with "ext:ip" (ExternalIP) and "int:ip" (InternalIP) addresses.
func node(name string, unschedulable bool, addrs ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Spec.Unschedulable = unschedulable
	for _, a := range addrs {
		typ := corev1.NodeInternalIP
		if ip, ok := strings.CutPrefix(a, "ext:"); ok {
			typ, a = corev1.NodeExternalIP, ip
		} else {
			a = strings.TrimPrefix(a, "int:")
		}
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: typ, Address: a})
	}
	return n
}

func serviceContext(eps []*discoveryv1.EndpointSlice, nodes []*corev1.Node) ServiceContext {
	return ServiceContext{
		EndpointSlices: func(ns, name string) []*discoveryv1.EndpointSlice {
			if ns != "app" || name != "svc" {
				return nil
			}
			return eps
		},
		Nodes: func() []*corev1.Node { return nodes },
	}
}

// The annotations a Service is published by.
const (
	host     = AnnotationPrefix + "hostname"
	internal = AnnotationPrefix + "internal-hostname"
	target   = AnnotationPrefix + "target"
	access   = AnnotationPrefix + "access"
	ttl      = AnnotationPrefix + "ttl"
)

// The Service types.
const (
	lb, cip, np, en = corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeExternalName
)

// at is the claims of names, each pointing at targets (comma-separated), with no TTL.
func at(targets string, names ...string) []string {
	var out []string
	for _, n := range names {
		out = append(out, n+" -> "+targets+" ttl=0 from Service/app/svc")
	}
	return out
}

// dualStack gives a Service cluster IPs of both families; local sets externalTrafficPolicy Local.
func dualStack(s *corev1.ServiceSpec) { s.ClusterIPs = []string{"10.96.0.10", "fd00::10"} }
func local(s *corev1.ServiceSpec)     { s.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal }

// The nodes and pods of the cluster the tables read, and the zones of a domain filter.
var (
	nodes = []*corev1.Node{
		node("n1", false, "int:10.0.0.1", "ext:203.0.113.1"),
		node("n2", false, "int:10.0.0.2", "ext:203.0.113.2", "int:fd00::2"),
		node("n3", true, "int:10.0.0.3", "ext:203.0.113.3"), // cordoned
	}
	internalOnly      = []*corev1.Node{node("n1", false, "int:10.0.0.1"), node("n2", false, "int:10.0.0.2")}
	dualStackNodes    = []*corev1.Node{node("n1", false, "int:10.0.0.1", "int:fd00::1", "ext:203.0.113.1", "ext:2001:db8::1")}
	internalIPv6Nodes = nodes[1:2] // n2: an IPv4 ExternalIP, IPv4 and IPv6 InternalIPs
	pods              = []*discoveryv1.EndpointSlice{
		slice(discoveryv1.AddressTypeIPv4,
			endpoint{addr: "10.244.0.1", hostname: "web-0", node: "n1", ready: true},
			endpoint{addr: "10.244.0.2", hostname: "web-1", node: "n2", ready: true},
			endpoint{addr: "10.244.0.3", hostname: "web-2", node: "n2"}), // not ready
		slice(discoveryv1.AddressTypeIPv6, endpoint{addr: "fd00:244::1", hostname: "web-0", node: "n1", ready: true}),
		slice(discoveryv1.AddressTypeFQDN, endpoint{addr: "ext.example.net", ready: true}),
	}
	zones = NewDomainFilter([]string{"example.com"}, nil)
)

type serviceCase struct {
	name    string
	cfg     Config
	svc     *corev1.Service
	eps     []*discoveryv1.EndpointSlice
	nodes   []*corev1.Node
	want    []string
	wantRej []string
}

func runServiceCases(t *testing.T, cases []serviceCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claims, rej := tc.cfg.ServiceClaims(tc.svc, serviceContext(tc.eps, tc.nodes))
			assertLines(t, "claims", fmtClaims(claims), tc.want)
			assertLines(t, "rejections", fmtRejections(rej), tc.wantRej)
		})
	}
}

// A LoadBalancer Service: its names point at the load balancer, or at what the annotations
// say instead.
func TestServiceClaimsOfALoadBalancer(t *testing.T) {
	runServiceCases(t, []serviceCase{
		{name: "LoadBalancer names point at the load balancer IP", svc: withLB(service(lb, host, "api.example.com"), "192.0.2.1"), want: at("192.0.2.1", "api.example.com")},
		{name: "several hostnames in one annotation, blanks trimmed", svc: withLB(service(lb, host, "a.example.com, b.example.com,,"), "192.0.2.1"), want: at("192.0.2.1", "a.example.com", "b.example.com")},
		{name: "legacy annotation prefix is read", svc: withLB(service(lb, LegacyAnnotationPrefix+"hostname", "a.example.com"), "192.0.2.1"), want: at("192.0.2.1", "a.example.com")},
		{name: "the current prefix wins over the legacy one", svc: withLB(service(lb, host, "new.example.com", LegacyAnnotationPrefix+"hostname", "old.example.com"), "192.0.2.1"),
			want: at("192.0.2.1", "new.example.com")},
		{name: "dual-stack load balancer gives A and AAAA", svc: withLB(service(lb, host, "a.example.com"), "192.0.2.1", "2001:db8::1"), want: at("192.0.2.1,2001:db8::1", "a.example.com")},
		{name: "load balancer hostname is a CNAME target", svc: withLB(service(lb, host, "a.example.com"), "host:LB-1.elb.example.net"), want: at("lb-1.elb.example.net", "a.example.com")},
		{name: "spec.externalIPs win over the load balancer status", svc: withSpec(withLB(service(lb, host, "a.example.com"), "192.0.2.1"), func(s *corev1.ServiceSpec) { s.ExternalIPs = []string{"198.51.100.7"} }),
			want: at("198.51.100.7", "a.example.com")},
		{name: "pending load balancer is reported, not published", svc: service(lb, host, "a.example.com"), wantRej: []string{"Service/app/svc a.example.com NoTargets"}},
		{name: "internal-hostname of a LoadBalancer points at its cluster IP", svc: withLB(service(lb, host, "a.example.com", internal, "a.internal.example.com"), "192.0.2.1"),
			want: append(at("192.0.2.1", "a.example.com"), at("10.96.0.10", "a.internal.example.com")...)},
		{name: "internal-hostname of a dual-stack Service gives every cluster IP (external-dns: only the first)", svc: withSpec(service(lb, internal, "a.internal.example.com"), dualStack),
			want: at("10.96.0.10,fd00::10", "a.internal.example.com")},
		{name: "target annotation overrides the load balancer", svc: withLB(service(lb, host, "a.example.com", target, "edge.example.net"), "192.0.2.1"), want: at("edge.example.net", "a.example.com")},
		{name: "target annotation overrides internal names too", svc: service(lb, internal, "i.example.com", target, "192.0.2.9"), want: at("192.0.2.9", "i.example.com")},
		{name: "empty target annotation is no override", svc: withLB(service(lb, host, "a.example.com", target, " "), "192.0.2.1"), want: at("192.0.2.1", "a.example.com")},
		{name: "invalid target entries are reported, the valid ones kept", svc: service(lb, host, "a.example.com", target, "192.0.2.9,bad_target"),
			want: at("192.0.2.9", "a.example.com"), wantRej: []string{"Service/app/svc - InvalidTarget"}},
		{name: "ttl annotation as a duration", svc: withLB(service(lb, host, "a.example.com", ttl, "2m"), "192.0.2.1"), want: []string{"a.example.com -> 192.0.2.1 ttl=120 from Service/app/svc"}},
		{name: "invalid ttl is reported and the default used", cfg: Config{DefaultTTL: 30}, svc: withLB(service(lb, host, "a.example.com", ttl, "-5"), "192.0.2.1"),
			want: []string{"a.example.com -> 192.0.2.1 ttl=30 from Service/app/svc"}, wantRej: []string{"Service/app/svc - InvalidTTL"}},
		{name: "invalid hostnames are reported, the valid ones published", svc: withLB(service(lb, host, "a.example.com,10.1.1.1,bad_name.example.com"), "192.0.2.1"),
			want: at("192.0.2.1", "a.example.com"), wantRej: []string{"Service/app/svc 10.1.1.1 InvalidHostname", "Service/app/svc bad_name.example.com InvalidHostname"}},
		{name: "wildcard hostname is published", svc: withLB(service(lb, host, "*.apps.example.com"), "192.0.2.1"), want: at("192.0.2.1", "*.apps.example.com")},
		{name: "a Service without annotation publishes nothing and says nothing", svc: withLB(service(lb), "192.0.2.1")},
	})
}

// A ClusterIP Service publishes its cluster IP at its internal names only, unless told.
func TestServiceClaimsOfAClusterIPService(t *testing.T) {
	runServiceCases(t, []serviceCase{
		{name: "ClusterIP internal-hostname points at the cluster IP", svc: service(cip, internal, "db.internal.example.com"), want: at("10.96.0.10", "db.internal.example.com")},
		{name: "ClusterIP hostname is reported as internal only", svc: service(cip, host, "db.example.com"), wantRej: []string{"Service/app/svc db.example.com NoTargets"}},
		{name: "publish-internal-services publishes the cluster IP at the hostname", cfg: Config{PublishInternal: true}, svc: service(cip, host, "db.example.com"), want: at("10.96.0.10", "db.example.com")},
		{name: "a Service without type is a ClusterIP Service", svc: service("", internal, "db.internal.example.com"), want: at("10.96.0.10", "db.internal.example.com")},
	})
}

// A headless Service publishes its ready endpoints, and a name per pod.
func TestServiceClaimsOfAHeadlessService(t *testing.T) {
	runServiceCases(t, []serviceCase{
		{name: "headless Service: ready endpoints, both families, per-pod names", svc: headless(host, "web.example.com"), eps: pods,
			want: []string{
				"web-0.web.example.com -> 10.244.0.1,fd00:244::1 ttl=0 from Service/app/svc",
				"web-1.web.example.com -> 10.244.0.2 ttl=0 from Service/app/svc",
				"web.example.com -> 10.244.0.1,10.244.0.2,fd00:244::1 ttl=0 from Service/app/svc",
			}},
		{name: "headless Service publishing not-ready addresses", svc: withSpec(headless(host, "web.example.com"), func(s *corev1.ServiceSpec) { s.PublishNotReadyAddresses = true }),
			eps: pods[:1], want: []string{
				"web-0.web.example.com -> 10.244.0.1 ttl=0 from Service/app/svc",
				"web-1.web.example.com -> 10.244.0.2 ttl=0 from Service/app/svc",
				"web-2.web.example.com -> 10.244.0.3 ttl=0 from Service/app/svc",
				"web.example.com -> 10.244.0.1,10.244.0.2,10.244.0.3 ttl=0 from Service/app/svc",
			}},
		{name: "headless Service internal-hostname gives the endpoints too", svc: headless(internal, "web.internal.example.com"), eps: pods[1:2],
			want: []string{"web-0.web.internal.example.com -> fd00:244::1 ttl=0 from Service/app/svc", "web.internal.example.com -> fd00:244::1 ttl=0 from Service/app/svc"}},
		{name: "headless Service without ready endpoints is reported", svc: headless(host, "web.example.com"),
			eps: []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, endpoint{addr: "10.244.0.3", hostname: "web-2"})}, wantRej: []string{"Service/app/svc web.example.com NoTargets"}},
		{name: "headless endpoint without conditions counts as ready", svc: headless(host, "web.example.com"),
			eps: []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, endpoint{addr: "10.244.0.9", unset: "ready serving terminating"})}, want: at("10.244.0.9", "web.example.com")},
		{name: "headless wildcard name has no per-pod names", svc: headless(host, "*.web.example.com"), eps: pods[:1], want: at("10.244.0.1,10.244.0.2", "*.web.example.com")},
		{name: "headless Service with a target annotation ignores its endpoints", svc: headless(host, "web.example.com", target, "192.0.2.5"), eps: pods, want: at("192.0.2.5", "web.example.com")},
		{name: "headless per-pod names outside the domain filter are reported", cfg: Config{DomainFilter: NewDomainFilter([]string{"web.example.com"}, []string{"web-1.web.example.com"})},
			svc: headless(host, "web.example.com"), eps: pods[:1],
			want:    []string{"web-0.web.example.com -> 10.244.0.1 ttl=0 from Service/app/svc", "web.example.com -> 10.244.0.1,10.244.0.2 ttl=0 from Service/app/svc"},
			wantRej: []string{"Service/app/svc web-1.web.example.com DomainFilter"}},
	})
}

// A NodePort Service points at the addresses of the schedulable nodes, external or internal
// as access says, with an SRV record per node port.
func TestServiceClaimsOfANodePortService(t *testing.T) {
	runServiceCases(t, []serviceCase{
		{name: "NodePort points at the schedulable nodes' external IPs", svc: service(np, host, "np.example.com"), nodes: nodes, want: at("203.0.113.1,203.0.113.2", "np.example.com")},
		{name: "NodePort falls back to internal IPs, IPv6 included", svc: service(np, host, "np.example.com"), nodes: append(internalOnly, node("n4", false, "int:fd00::4")),
			want: at("10.0.0.1,10.0.0.2,fd00::4", "np.example.com")},
		{name: "NodePort names get an SRV record per node port, as external-dns writes them", svc: withSpec(service(np, host, "np.example.com"), func(s *corev1.ServiceSpec) {
			s.Ports = []corev1.ServicePort{{Name: "mqtt", Port: 1883, NodePort: 31883, Protocol: corev1.ProtocolTCP}, {Name: "dns", Port: 53, NodePort: 30053, Protocol: corev1.ProtocolUDP}, {Name: "none", Port: 80}}
		}), nodes: nodes, want: []string{
			"_svc._tcp.np.example.com -> SRV 0 50 31883 np.example.com ttl=0 from Service/app/svc",
			"_svc._udp.np.example.com -> SRV 0 50 30053 np.example.com ttl=0 from Service/app/svc",
			"np.example.com -> 203.0.113.1,203.0.113.2 ttl=0 from Service/app/svc",
		}},
		{name: "a wildcard NodePort name has no SRV record", svc: withSpec(service(np, host, "*.np.example.com"), func(s *corev1.ServiceSpec) {
			s.Ports = []corev1.ServicePort{{Port: 1883, NodePort: 31883, Protocol: corev1.ProtocolTCP}}
		}), nodes: nodes, want: at("203.0.113.1,203.0.113.2", "*.np.example.com")},
		{name: "NodePort access=private takes internal IPs", svc: service(np, host, "np.example.com", access, "private"), nodes: nodes,
			want: at("10.0.0.1,10.0.0.2,fd00::2", "np.example.com")},
		// Dual-stack nodes, as external-dns v0.21.0 reads them with its default
		// --expose-internal-ipv6=false: an IPv6 InternalIP joins only with access=private.
		{name: "dual-stack NodePort points at the ExternalIPs of both families", svc: service(np, host, "np.example.com"), nodes: dualStackNodes,
			want: at("2001:db8::1,203.0.113.1", "np.example.com")},
		{name: "dual-stack NodePort access=public takes the ExternalIPs of both families", svc: service(np, host, "np.example.com", access, "public"), nodes: dualStackNodes,
			want: at("2001:db8::1,203.0.113.1", "np.example.com")},
		{name: "dual-stack NodePort access=private takes the InternalIPs of both families", svc: service(np, host, "np.example.com", access, "private"), nodes: dualStackNodes,
			want: at("10.0.0.1,fd00::1", "np.example.com")},
		{name: "an IPv6 InternalIP is not published beside IPv4 ExternalIPs", svc: service(np, host, "np.example.com"), nodes: internalIPv6Nodes,
			want: at("203.0.113.2", "np.example.com")},
		{name: "an IPv6 InternalIP is not published with access=public", svc: service(np, host, "np.example.com", access, "public"), nodes: internalIPv6Nodes,
			want: at("203.0.113.2", "np.example.com")},
		{name: "an IPv6 InternalIP is published with access=private", svc: service(np, host, "np.example.com", access, "private"), nodes: internalIPv6Nodes,
			want: at("10.0.0.2,fd00::2", "np.example.com")},
		{name: "the legacy-prefix access annotation is read", svc: service(np, host, "np.example.com", LegacyAnnotationPrefix+"access", "private"), nodes: dualStackNodes,
			want: at("10.0.0.1,fd00::1", "np.example.com")},
		{name: "an access value other than public or private is the default", svc: service(np, host, "np.example.com", access, "Private"), nodes: dualStackNodes,
			want: at("2001:db8::1,203.0.113.1", "np.example.com")},
		{name: "NodePort access=public with no external IP is reported", svc: service(np, host, "np.example.com", access, "public"), nodes: internalOnly,
			wantRej: []string{"Service/app/svc np.example.com NoTargets"}},
	})
}

// A NodePort Service with externalTrafficPolicy Local points only at the nodes that run a
// ready endpoint (or a serving one while none is ready).
func TestServiceClaimsOfANodePortServiceWithLocalTraffic(t *testing.T) {
	runServiceCases(t, []serviceCase{
		{name: "NodePort Local: only nodes running a ready endpoint", svc: withSpec(service(np, host, "np.example.com"), local), nodes: nodes,
			eps:  []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, endpoint{addr: "10.244.0.1", node: "n1", ready: true}, endpoint{addr: "10.244.0.3", node: "n2"})},
			want: at("203.0.113.1", "np.example.com")},
		{name: "NodePort Local: terminating serving endpoints when none is ready", svc: withSpec(service(np, host, "np.example.com"), local), nodes: nodes,
			eps:  []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, endpoint{addr: "10.244.0.1", node: "n1"}, endpoint{addr: "10.244.0.2", node: "n2", ready: true, terminating: true})},
			want: at("203.0.113.2", "np.example.com")},
		// The EndpointSlice API reads a nil ready or serving as true and a nil terminating as
		// false; the controller sets all three, other writers may leave any out.
		{name: "NodePort Local: a ready endpoint with terminating unset counts as ready", svc: withSpec(service(np, host, "np.example.com"), local), nodes: nodes,
			eps: []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4,
				endpoint{addr: "10.244.0.1", node: "n1", ready: true}, endpoint{addr: "10.244.0.2", node: "n2", ready: true, unset: "terminating"})},
			want: at("203.0.113.1,203.0.113.2", "np.example.com")},
		{name: "NodePort Local: an endpoint with only ready set counts as ready", svc: withSpec(service(np, host, "np.example.com"), local), nodes: nodes,
			eps: []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4,
				endpoint{addr: "10.244.0.1", node: "n1", ready: true}, endpoint{addr: "10.244.0.2", node: "n2", ready: true, unset: "serving terminating"})},
			want: at("203.0.113.1,203.0.113.2", "np.example.com")},
		{name: "NodePort Local: an endpoint without conditions counts as ready", svc: withSpec(service(np, host, "np.example.com"), local), nodes: nodes,
			eps: []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4,
				endpoint{addr: "10.244.0.1", node: "n1", ready: true}, endpoint{addr: "10.244.0.2", node: "n2", unset: "ready serving terminating"})},
			want: at("203.0.113.1,203.0.113.2", "np.example.com")},
		{name: "NodePort Local: a terminating endpoint with serving unset is serving", svc: withSpec(service(np, host, "np.example.com"), local), nodes: nodes,
			eps: []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4,
				endpoint{addr: "10.244.0.1", node: "n1", terminating: true, unset: "serving"},
				endpoint{addr: "10.244.0.2", node: "n2", terminating: true})}, // serving false: its pod is not ready
			want: at("203.0.113.1", "np.example.com")},
		{name: "NodePort Local: a not-ready endpoint with serving and terminating unset is neither ready nor terminating",
			svc: withSpec(service(np, host, "np.example.com"), local), nodes: nodes,
			eps: []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4,
				endpoint{addr: "10.244.0.1", node: "n1", unset: "serving terminating"}, endpoint{addr: "10.244.0.2", node: "n2"})},
			want: at("203.0.113.1,203.0.113.2", "np.example.com")},
		{name: "NodePort Local without endpoints is reported", svc: withSpec(service(np, host, "np.example.com"), local), nodes: nodes,
			wantRej: []string{"Service/app/svc np.example.com NoTargets"}},
	})
}

// An ExternalName Service is a CNAME to its external name.
func TestServiceClaimsOfAnExternalNameService(t *testing.T) {
	runServiceCases(t, []serviceCase{
		{name: "ExternalName is a CNAME to spec.externalName", svc: withSpec(service(en, host, "ext.example.com"), func(s *corev1.ServiceSpec) { s.ExternalName = "Upstream.Example.NET." }),
			want: at("upstream.example.net", "ext.example.com")},
		{name: "ExternalName with externalIPs publishes them", svc: withSpec(service(en, host, "ext.example.com"), func(s *corev1.ServiceSpec) {
			s.ExternalName, s.ExternalIPs = "upstream.example.net", []string{"198.51.100.1"}
		}), want: at("198.51.100.1", "ext.example.com")},
	})
}

// The filters of the publish role leave out the Services and names that are not its.
func TestServiceClaimsThroughTheFilters(t *testing.T) {
	runServiceCases(t, []serviceCase{
		{name: "service-types filter leaves out other types", cfg: Config{ServiceTypes: []corev1.ServiceType{np}}, svc: withLB(service(lb, host, "a.example.com"), "192.0.2.1")},
		{name: "service-types filter admits its types", cfg: Config{ServiceTypes: []corev1.ServiceType{lb, np}}, svc: withLB(service(lb, host, "a.example.com"), "192.0.2.1"), want: at("192.0.2.1", "a.example.com")},
		{name: "namespace filter leaves out other namespaces", cfg: Config{Namespaces: []string{"prod"}}, svc: withLB(service(lb, host, "a.example.com"), "192.0.2.1")},
		{name: "label selector leaves out other Services", cfg: Config{LabelSelector: mustSelector("dns=yes")}, svc: withLB(service(lb, host, "a.example.com"), "192.0.2.1")},
		{name: "controller annotation naming another controller is skipped", cfg: Config{ControllerName: "gatewaydns"},
			svc: withLB(service(lb, host, "a.example.com", AnnotationPrefix+"controller", "dns-controller"), "192.0.2.1")},
		{name: "domain filter rejects names outside", cfg: Config{DomainFilter: zones, Zones: zones}, svc: withLB(service(lb, host, "a.example.com,a.example.org"), "192.0.2.1"),
			want: at("192.0.2.1", "a.example.com"), wantRej: []string{"Service/app/svc a.example.org DomainFilter"}},
		{name: "a Service naming only other zones is another controller's: no Events", cfg: Config{DomainFilter: zones, Zones: zones}, svc: service(lb, host, "a.example.org")},
	})
}
