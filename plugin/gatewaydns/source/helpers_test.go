package source

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Shared fixtures: a route "r" in namespace "app" and Gateways looked up from a slice.

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// ref builds a parentRef to a Gateway, modified by mods.
func ref(name string, mods ...func(*gatewayv1.ParentReference)) gatewayv1.ParentReference {
	pr := gatewayv1.ParentReference{Name: gatewayv1.ObjectName(name)}
	for _, m := range mods {
		m(&pr)
	}
	return pr
}

func section(s string) func(*gatewayv1.ParentReference) {
	return func(pr *gatewayv1.ParentReference) { pr.SectionName = ptr(gatewayv1.SectionName(s)) }
}

func port(p int32) func(*gatewayv1.ParentReference) {
	return func(pr *gatewayv1.ParentReference) { pr.Port = ptr(gatewayv1.PortNumber(p)) }
}

func refNS(ns string) func(*gatewayv1.ParentReference) {
	return func(pr *gatewayv1.ParentReference) { pr.Namespace = ptr(gatewayv1.Namespace(ns)) }
}

func refKind(group, kind string) func(*gatewayv1.ParentReference) {
	return func(pr *gatewayv1.ParentReference) {
		pr.Group = ptr(gatewayv1.Group(group))
		pr.Kind = ptr(gatewayv1.Kind(kind))
	}
}

func accepted(pr gatewayv1.ParentReference, status metav1.ConditionStatus) gatewayv1.RouteParentStatus {
	return gatewayv1.RouteParentStatus{
		ParentRef:      pr,
		ControllerName: "example.com/gateway-controller",
		Conditions: []metav1.Condition{
			{Type: "ResolvedRefs", Status: metav1.ConditionTrue},
			{Type: string(gatewayv1.RouteConditionAccepted), Status: status},
		},
	}
}

// route builds a route of kind in namespace "app" named "r", with an Accepted=True status
// entry for every parentRef.
func route(kind string, hosts []string, refs ...gatewayv1.ParentReference) Route {
	r := Route{Kind: kind, Namespace: "app", Name: "r", Created: t0, ParentRefs: refs}
	for _, h := range hosts {
		r.Hostnames = append(r.Hostnames, gatewayv1.Hostname(h))
	}
	for _, pr := range refs {
		r.Parents = append(r.Parents, accepted(pr, metav1.ConditionTrue))
	}
	return r
}

func withAnnotations(r Route, kv ...string) Route {
	r.Annotations = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		r.Annotations[kv[i]] = kv[i+1]
	}
	return r
}

func withLabels(r Route, kv ...string) Route {
	r.Labels = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		r.Labels[kv[i]] = kv[i+1]
	}
	return r
}

func inNamespace(r Route, ns string) Route {
	r.Namespace = ns
	return r
}

func listener(name string, proto gatewayv1.ProtocolType, p int32, host string) gatewayv1.Listener {
	l := gatewayv1.Listener{Name: gatewayv1.SectionName(name), Protocol: proto, Port: gatewayv1.PortNumber(p)}
	if host != "" {
		l.Hostname = ptr(gatewayv1.Hostname(host))
	}
	return l
}

func fromAll(l gatewayv1.Listener) gatewayv1.Listener {
	l.AllowedRoutes = &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr(gatewayv1.NamespacesFromAll)}}
	return l
}

// gateway builds Gateway ns/name of class "cls" with listeners and status addresses; an
// address "host:x" has type Hostname, "type:T:x" type T, anything else type IPAddress.
func gateway(ns, name string, listeners []gatewayv1.Listener, addrs ...string) *gatewayv1.Gateway {
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: "cls", Listeners: listeners},
	}
	for _, a := range addrs {
		typ := gatewayv1.IPAddressType
		switch {
		case strings.HasPrefix(a, "host:"):
			typ, a = gatewayv1.HostnameAddressType, strings.TrimPrefix(a, "host:")
		case strings.HasPrefix(a, "type:"):
			parts := strings.SplitN(a, ":", 3)
			typ, a = gatewayv1.AddressType(parts[1]), parts[2]
		}
		gw.Status.Addresses = append(gw.Status.Addresses, gatewayv1.GatewayStatusAddress{Type: ptr(typ), Value: a})
	}
	return gw
}

func gwAnnotate(gw *gatewayv1.Gateway, kv ...string) *gatewayv1.Gateway {
	gw.Annotations = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		gw.Annotations[kv[i]] = kv[i+1]
	}
	return gw
}

func lookup(gws []*gatewayv1.Gateway) GatewayLookup {
	return func(ns, name string) (*gatewayv1.Gateway, bool) {
		for _, gw := range gws {
			if gw.Namespace == ns && gw.Name == name {
				return gw, true
			}
		}
		return nil, false
	}
}

func nsLookup(m map[string]map[string]string) NamespaceLabels {
	return func(ns string) (map[string]string, bool) {
		l, ok := m[ns]
		return l, ok
	}
}

// fmtClaims renders claims as "name -> targets ttl=N from Kind/ns/name", the targets followed
// by the typed records' canonical forms.
func fmtClaims(cs []Claim) []string {
	var out []string
	for _, c := range cs {
		data := slices.Clone(c.Targets)
		for _, r := range c.Records {
			data = append(data, r.String())
		}
		out = append(out, fmt.Sprintf("%s -> %s ttl=%d from %s", c.Name, strings.Join(data, ","), c.TTL, c.Source))
	}
	return out
}

// fmtRejections renders rejections as "Kind/ns/name hostname Cause" ("-" for no hostname).
func fmtRejections(rs []Rejection) []string {
	var out []string
	for _, r := range rs {
		h := r.Hostname
		if h == "" {
			h = "-"
		}
		out = append(out, fmt.Sprintf("%s %s %s", r.Object, h, r.Cause))
	}
	return out
}

func fmtEndpoints(eps []record.Endpoint) []string {
	var out []string
	for _, e := range eps {
		var src []string
		for _, s := range e.Sources {
			src = append(src, s.String())
		}
		line := fmt.Sprintf("%s -> %s ttl=%d from %s", e.Name, strings.Join(e.Targets, ","), e.TTL, strings.Join(src, ","))
		for _, r := range e.Records {
			line += " | " + r.String()
		}
		out = append(out, line)
	}
	return out
}

func assertLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got: %q\nwant: %q", what, got, want)
	}
}

func itoa(n uint32) string { return fmt.Sprint(n) }
