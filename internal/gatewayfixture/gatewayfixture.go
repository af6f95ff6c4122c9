// Package gatewayfixture plays a gateway controller against a real kube-apiserver in tests:
// it creates Gateways, routes, Ingresses, Services and DNSEndpoints and sets their status as a
// controller (or a cloud provider) would, so that gatewaydns sees what it sees in a cluster.
package gatewayfixture

import (
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// ControllerName is the controller the fixture's status entries name.
const ControllerName = "example.com/test-gateway-controller"

// Cluster is one API server as a gateway controller sees it.
type Cluster struct {
	t    testing.TB
	Kube kubernetes.Interface
	GW   gwclient.Interface
	Dyn  dynamic.Interface
}

// New connects to the API server of rc.
func New(t testing.TB, rc *rest.Config) *Cluster {
	t.Helper()
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gwclient.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return &Cluster{t: t, Kube: kube, GW: gw, Dyn: dyn}
}

func (c *Cluster) must(err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
}

// Namespace creates a namespace.
func (c *Cluster) Namespace(name string) {
	c.t.Helper()
	_, err := c.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	c.must(err)
}

// Gateway creates a Gateway with one listener (protocol, port, hostname; All namespaces
// allowed) and programs the given addresses into its status.
func (c *Cluster) Gateway(namespace, name string, protocol gatewayv1.ProtocolType, port int32, hostname string, addresses ...string) {
	c.t.Helper()
	l := Listener(protocol, port, hostname)
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: "test", Listeners: []gatewayv1.Listener{l}},
	}
	_, err := c.GW.GatewayV1().Gateways(namespace).Create(context.Background(), gw, metav1.CreateOptions{})
	c.must(err)
	c.SetGatewayAddresses(namespace, name, addresses...)
}

// Listener is the one listener of a Gateway that Gateway (and the demo) create: named "l",
// open to routes of every namespace, for hostname when it is not empty.
func Listener(protocol gatewayv1.ProtocolType, port int32, hostname string) gatewayv1.Listener {
	all := gatewayv1.NamespacesFromAll
	l := gatewayv1.Listener{Name: "l", Protocol: protocol, Port: port,
		AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &all}}}
	if hostname != "" {
		h := gatewayv1.Hostname(hostname)
		l.Hostname = &h
	}
	return l
}

// SetGatewayAddresses replaces the Gateway's status.addresses, as its controller would after
// the load balancer changed.
func (c *Cluster) SetGatewayAddresses(namespace, name string, addresses ...string) {
	c.t.Helper()
	c.must(c.TrySetGatewayAddresses(context.Background(), namespace, name, addresses...))
}

// TrySetGatewayAddresses is SetGatewayAddresses that returns its error: for a test that
// changes objects while the API server comes and goes.
func (c *Cluster) TrySetGatewayAddresses(ctx context.Context, namespace, name string, addresses ...string) error {
	gw, err := c.GW.GatewayV1().Gateways(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	gw.Status.Addresses = nil
	for _, a := range addresses {
		typ := gatewayv1.IPAddressType
		if net.ParseIP(a) == nil {
			typ = gatewayv1.HostnameAddressType // a load balancer known by name: a CNAME target
		}
		gw.Status.Addresses = append(gw.Status.Addresses, gatewayv1.GatewayStatusAddress{Type: &typ, Value: a})
	}
	_, err = c.GW.GatewayV1().Gateways(namespace).UpdateStatus(ctx, gw, metav1.UpdateOptions{})
	return err
}

// SetGatewayProgrammed sets the Gateway's Programmed condition, as its controller does when
// the data plane stops or starts carrying traffic; the addresses stay.
func (c *Cluster) SetGatewayProgrammed(namespace, name string, status metav1.ConditionStatus) {
	c.t.Helper()
	ctx := context.Background()
	gw, err := c.GW.GatewayV1().Gateways(namespace).Get(ctx, name, metav1.GetOptions{})
	c.must(err)
	reason := string(gatewayv1.GatewayReasonProgrammed)
	if status != metav1.ConditionTrue {
		reason = string(gatewayv1.GatewayReasonInvalid)
	}
	meta.SetStatusCondition(&gw.Status.Conditions, metav1.Condition{
		Type: string(gatewayv1.GatewayConditionProgrammed), Status: status, Reason: reason,
		ObservedGeneration: gw.Generation,
	})
	_, err = c.GW.GatewayV1().Gateways(namespace).UpdateStatus(ctx, gw, metav1.UpdateOptions{})
	c.must(err)
}

// HTTPRoute creates an HTTPRoute for hostnames attached to the Gateway gwNamespace/gwName, and
// marks it Accepted by that Gateway.
func (c *Cluster) HTTPRoute(namespace, name, gwNamespace, gwName string, hostnames ...string) {
	c.t.Helper()
	c.must(c.TryHTTPRoute(context.Background(), namespace, name, gwNamespace, gwName, hostnames...))
}

// TryHTTPRoute is HTTPRoute that returns its error (see TrySetGatewayAddresses). A route
// created whose status update failed exists without being Accepted.
func (c *Cluster) TryHTTPRoute(ctx context.Context, namespace, name, gwNamespace, gwName string, hostnames ...string) error {
	if err := c.TryPendingHTTPRoute(ctx, namespace, name, gwNamespace, gwName, hostnames...); err != nil {
		return err
	}
	return c.TryAcceptHTTPRoute(ctx, namespace, name)
}

// TryPendingHTTPRoute creates an HTTPRoute as its gateway controller first sees it: attached to
// the Gateway gwNamespace/gwName, with no status yet.
func (c *Cluster) TryPendingHTTPRoute(ctx context.Context, namespace, name, gwNamespace, gwName string, hostnames ...string) error {
	ns := gatewayv1.Namespace(gwNamespace)
	ref := gatewayv1.ParentReference{Namespace: &ns, Name: gatewayv1.ObjectName(gwName)}
	r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	r.Spec.ParentRefs = []gatewayv1.ParentReference{ref}
	for _, h := range hostnames {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gatewayv1.Hostname(h))
	}
	_, err := c.GW.GatewayV1().HTTPRoutes(namespace).Create(ctx, r, metav1.CreateOptions{})
	return err
}

// TryAcceptHTTPRoute marks an HTTPRoute Accepted by each of its parents, as its gateway
// controller does once it has taken the route.
func (c *Cluster) TryAcceptHTTPRoute(ctx context.Context, namespace, name string) error {
	r, err := c.GW.GatewayV1().HTTPRoutes(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	r.Status.Parents = nil
	for _, ref := range r.Spec.ParentRefs {
		r.Status.Parents = append(r.Status.Parents, Accepted(ref, r.Generation))
	}
	_, err = c.GW.GatewayV1().HTTPRoutes(namespace).UpdateStatus(ctx, r, metav1.UpdateOptions{})
	return err
}

// AnnotateHTTPRoute sets annotations of an HTTPRoute (key, value, ...), as a person does with
// kubectl annotate --overwrite; a value "-" removes the annotation.
func (c *Cluster) AnnotateHTTPRoute(namespace, name string, kv ...string) {
	c.t.Helper()
	_, err := c.GW.GatewayV1().HTTPRoutes(namespace).Patch(context.Background(), name, types.MergePatchType, annotationPatch(kv), metav1.PatchOptions{})
	c.must(err)
}

// AnnotateGateway sets annotations of a Gateway, as AnnotateHTTPRoute does.
func (c *Cluster) AnnotateGateway(namespace, name string, kv ...string) {
	c.t.Helper()
	_, err := c.GW.GatewayV1().Gateways(namespace).Patch(context.Background(), name, types.MergePatchType, annotationPatch(kv), metav1.PatchOptions{})
	c.must(err)
}

// annotationPatch is the merge patch that sets the annotations kv (key, value, ...; "-"
// removes one).
func annotationPatch(kv []string) []byte {
	annots := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "-" {
			annots[kv[i]] = nil
		} else {
			annots[kv[i]] = kv[i+1]
		}
	}
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annots}})
	if err != nil {
		panic(err) // strings only
	}
	return b
}

// DeleteHTTPRoute deletes an HTTPRoute.
func (c *Cluster) DeleteHTTPRoute(namespace, name string) {
	c.t.Helper()
	c.must(c.GW.GatewayV1().HTTPRoutes(namespace).Delete(context.Background(), name, metav1.DeleteOptions{}))
}

// Ingress creates an Ingress for host and sets its load balancer address.
func (c *Cluster) Ingress(namespace, name, host, ip string) {
	c.t.Helper()
	ctx := context.Background()
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: host}}}}
	ing, err := c.Kube.NetworkingV1().Ingresses(namespace).Create(ctx, ing, metav1.CreateOptions{})
	c.must(err)
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: ip}}
	_, err = c.Kube.NetworkingV1().Ingresses(namespace).UpdateStatus(ctx, ing, metav1.UpdateOptions{})
	c.must(err)
}

// LoadBalancerService creates a Service of type LoadBalancer named in the external-dns hostname
// annotation (a comma list) and, when ips are given, sets its load balancer addresses as a cloud
// provider would.
func (c *Cluster) LoadBalancerService(namespace, name, hostnames string, ips ...string) {
	c.t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
			Annotations: map[string]string{"external-dns.kubernetes.io/hostname": hostnames}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}}},
	}
	_, err := c.Kube.CoreV1().Services(namespace).Create(context.Background(), svc, metav1.CreateOptions{})
	c.must(err)
	if len(ips) > 0 {
		c.SetLoadBalancerIngress(namespace, name, ips...)
	}
}

// Endpoint is one entry of a DNSEndpoint's spec.endpoints.
type Endpoint struct {
	DNSName, RecordType string
	TTL                 int64
	Targets             []string
}

// DNSEndpoint creates external-dns's DNSEndpoint namespace/name with endpoints, as a user
// writes it (its CRD must be installed: testenv's InstallDNSEndpointCRD).
func (c *Cluster) DNSEndpoint(namespace, name string, endpoints ...Endpoint) {
	c.t.Helper()
	var eps []any
	for _, e := range endpoints {
		targets := []any{}
		for _, t := range e.Targets {
			targets = append(targets, t)
		}
		eps = append(eps, map[string]any{"dnsName": e.DNSName, "recordType": e.RecordType, "recordTTL": e.TTL, "targets": targets})
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": source.DNSEndpointGVR.GroupVersion().String(), "kind": source.KindDNSEndpoint,
		"metadata": map[string]any{"namespace": namespace, "name": name},
		"spec":     map[string]any{"endpoints": eps},
	}}
	_, err := c.Dyn.Resource(source.DNSEndpointGVR).Namespace(namespace).Create(context.Background(), obj, metav1.CreateOptions{})
	c.must(err)
}

// SetLoadBalancerIngress sets a Service's status.loadBalancer.ingress to ips.
func (c *Cluster) SetLoadBalancerIngress(namespace, name string, ips ...string) {
	c.t.Helper()
	ctx := context.Background()
	svc, err := c.Kube.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	c.must(err)
	svc.Status.LoadBalancer.Ingress = nil
	for _, ip := range ips {
		svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	_, err = c.Kube.CoreV1().Services(namespace).UpdateStatus(ctx, svc, metav1.UpdateOptions{})
	c.must(err)
}

// Accepted is the status entry the fixture's controller writes for a route it accepted on ref.
func Accepted(ref gatewayv1.ParentReference, generation int64) gatewayv1.RouteParentStatus {
	return AcceptedBy(ControllerName, ref, generation)
}

// AcceptedBy is the status entry controller writes for a route it accepted on ref.
func AcceptedBy(controller gatewayv1.GatewayController, ref gatewayv1.ParentReference, generation int64) gatewayv1.RouteParentStatus {
	return gatewayv1.RouteParentStatus{
		ParentRef:      ref,
		ControllerName: controller,
		Conditions: []metav1.Condition{{
			Type: string(gatewayv1.RouteConditionAccepted), Status: metav1.ConditionTrue,
			Reason: string(gatewayv1.RouteReasonAccepted), ObservedGeneration: generation,
			LastTransitionTime: metav1.Now(),
		}},
	}
}

// WarningEvents lists the Warning Events with reason on the object kind/namespace/name.
func (c *Cluster) WarningEvents(namespace, kind, name, reason string) []corev1.Event {
	c.t.Helper()
	list, err := c.Kube.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
	c.must(err)
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// WaitWarningEvents waits until the object kind/namespace/name has a Warning Event with reason
// and returns them; the test fails when none came within the given time.
func (c *Cluster) WaitWarningEvents(namespace, kind, name, reason string, within time.Duration) []corev1.Event {
	c.t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
		if evs := c.WarningEvents(namespace, kind, name, reason); len(evs) > 0 {
			return evs
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no %s Warning Event on %s %s/%s within %s", reason, kind, namespace, name, within)
		}
	}
}
