package kubesource

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// slimmer builds the informers' transform function: every object is replaced by a new one that
// holds only what the mapping (package source) and the Events need, as CoreDNS's
// plugin/kubernetes/object does, so that the caches stay small. managedFields, route rules,
// TLS settings, status conditions other than type and status (of a route, other than its
// Accepted), and annotations and labels that nothing reads are dropped; the strings that many
// objects share (namespaces, parent references) are kept once (transform_route.go). The
// transform is idempotent.
type slimmer struct {
	// labelKeys are the label keys that Config.LabelSelector reads (nil: none is needed).
	labelKeys map[string]bool
	// gatewayLabelKeys are those that Config.GatewayLabelSelector reads.
	gatewayLabelKeys map[string]bool
	// annotationKeys are the annotation keys that Config.AnnotationFilter reads, besides the
	// external-dns annotations (under prefixes, Config.Prefixes) and the gatewaydns ones,
	// which are always kept.
	annotationKeys map[string]bool
	prefixes       []string
}

func newSlimmer(cfg *source.Config) *slimmer {
	return &slimmer{labelKeys: selectorKeys(cfg.LabelSelector), gatewayLabelKeys: selectorKeys(cfg.GatewayLabelSelector),
		annotationKeys: selectorKeys(cfg.AnnotationFilter), prefixes: cfg.Prefixes()}
}

func selectorKeys(sel labels.Selector) map[string]bool {
	if sel == nil {
		return nil
	}
	reqs, _ := sel.Requirements()
	if len(reqs) == 0 {
		return nil
	}
	keys := map[string]bool{}
	for _, r := range reqs {
		keys[r.Key()] = true
	}
	return keys
}

func (s *slimmer) keepAnnotation(key string) bool {
	for _, p := range s.prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return key == source.BaseDomainAnnotation || key == source.IngressClassAnnotation ||
		strings.HasPrefix(key, source.SteeringPrefix) || s.annotationKeys[key]
}

// meta keeps name, namespace, UID, resourceVersion, creationTimestamp, the annotations that are
// read and the labels of labelKeys.
func (s *slimmer) meta(m *metav1.ObjectMeta, labelKeys map[string]bool) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: m.Name, Namespace: intern(m.Namespace), UID: m.UID,
		ResourceVersion: m.ResourceVersion, CreationTimestamp: m.CreationTimestamp,
	}
	for k, v := range m.Labels {
		if labelKeys[k] {
			if out.Labels == nil {
				out.Labels = map[string]string{}
			}
			out.Labels[k] = v
		}
	}
	for k, v := range m.Annotations {
		if s.keepAnnotation(k) {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	return out
}

// routeMeta is meta for routes and Ingresses: labels only as the label selector needs them.
func (s *slimmer) routeMeta(m *metav1.ObjectMeta) metav1.ObjectMeta { return s.meta(m, s.labelKeys) }

// Transform is a cache.TransformFunc. Objects of other types (and tombstones) pass unchanged.
func (s *slimmer) Transform(obj any) (any, error) {
	if r, ok := s.route(obj); ok {
		return r, nil
	}
	switch o := obj.(type) {
	case *gatewayv1beta1.Gateway: // the v1 type under another name: stored as v1
		return s.gateway((*gatewayv1.Gateway)(o)), nil
	case *networkingv1.Ingress:
		return s.ingress(o), nil
	case *unstructured.Unstructured:
		if k := o.GetKind(); k == source.KindDNSEndpoint || k == "" { // only DNSEndpoints are read unstructured
			return s.dnsEndpoint(o), nil
		}
	case *corev1.Service:
		return s.service(o), nil
	case *discoveryv1.EndpointSlice:
		return slimEndpointSlice(o), nil
	case *corev1.Node:
		return slimNode(o), nil
	case *corev1.Namespace:
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion, Labels: o.Labels,
		}}, nil
	}
	return obj, nil
}

func (s *slimmer) gateway(o *gatewayv1.Gateway) *gatewayv1.Gateway {
	m := s.meta(&o.ObjectMeta, s.gatewayLabelKeys) // labels only as gateway-label-filter needs them
	out := &gatewayv1.Gateway{ObjectMeta: m}
	out.Spec.GatewayClassName = o.Spec.GatewayClassName
	if len(o.Spec.Listeners) > 0 {
		out.Spec.Listeners = make([]gatewayv1.Listener, len(o.Spec.Listeners))
		for i, l := range o.Spec.Listeners {
			out.Spec.Listeners[i] = gatewayv1.Listener{
				Name: l.Name, Hostname: l.Hostname, Port: l.Port, Protocol: l.Protocol, AllowedRoutes: l.AllowedRoutes,
			}
		}
	}
	out.Spec.AllowedListeners = o.Spec.AllowedListeners // which ListenerSets may attach
	out.Status.Addresses = o.Status.Addresses
	// Programmed alone, type and status: its transitions withdraw and restore the Gateway's
	// names; any other condition change must not wake the sources.
	for _, c := range o.Status.Conditions {
		if c.Type == string(gatewayv1.GatewayConditionProgrammed) {
			out.Status.Conditions = []metav1.Condition{{Type: c.Type, Status: c.Status}}
			break
		}
	}
	return out
}

func (s *slimmer) ingress(o *networkingv1.Ingress) *networkingv1.Ingress {
	out := &networkingv1.Ingress{ObjectMeta: s.routeMeta(&o.ObjectMeta)}
	out.Spec.IngressClassName = o.Spec.IngressClassName
	for _, r := range o.Spec.Rules {
		if r.Host != "" {
			out.Spec.Rules = append(out.Spec.Rules, networkingv1.IngressRule{Host: r.Host})
		}
	}
	for _, t := range o.Spec.TLS {
		if len(t.Hosts) > 0 {
			out.Spec.TLS = append(out.Spec.TLS, networkingv1.IngressTLS{Hosts: t.Hosts})
		}
	}
	for _, lb := range o.Status.LoadBalancer.Ingress {
		out.Status.LoadBalancer.Ingress = append(out.Status.LoadBalancer.Ingress,
			networkingv1.IngressLoadBalancerIngress{IP: lb.IP, Hostname: lb.Hostname})
	}
	return out
}

// service keeps the type, the cluster, external and load balancer addresses, the external
// name, the traffic policy, publishNotReadyAddresses and the node ports.
func (s *slimmer) service(o *corev1.Service) *corev1.Service {
	out := &corev1.Service{ObjectMeta: s.routeMeta(&o.ObjectMeta)}
	out.Spec = corev1.ServiceSpec{
		Type: o.Spec.Type, ClusterIP: o.Spec.ClusterIP, ClusterIPs: o.Spec.ClusterIPs, ExternalIPs: o.Spec.ExternalIPs,
		ExternalName: o.Spec.ExternalName, ExternalTrafficPolicy: o.Spec.ExternalTrafficPolicy,
		PublishNotReadyAddresses: o.Spec.PublishNotReadyAddresses,
	}
	for _, p := range o.Spec.Ports {
		if p.NodePort > 0 { // the SRV records of a NodePort Service
			out.Spec.Ports = append(out.Spec.Ports, corev1.ServicePort{Protocol: p.Protocol, NodePort: p.NodePort})
		}
	}
	for _, lb := range o.Status.LoadBalancer.Ingress {
		out.Status.LoadBalancer.Ingress = append(out.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: lb.IP, Hostname: lb.Hostname})
	}
	return out
}

// slimEndpointSlice keeps the Service label, the address type and, per endpoint, the first
// address, the hostname, the node and the conditions.
func slimEndpointSlice(o *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	out := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{
		Name: o.Name, Namespace: o.Namespace, UID: o.UID, ResourceVersion: o.ResourceVersion,
	}, AddressType: o.AddressType}
	if svc := o.Labels[discoveryv1.LabelServiceName]; svc != "" {
		out.Labels = map[string]string{discoveryv1.LabelServiceName: svc}
	}
	if len(o.Endpoints) > 0 {
		out.Endpoints = make([]discoveryv1.Endpoint, len(o.Endpoints))
		for i, ep := range o.Endpoints {
			out.Endpoints[i] = discoveryv1.Endpoint{Addresses: ep.Addresses[:min(len(ep.Addresses), 1)],
				Hostname: ep.Hostname, NodeName: ep.NodeName, Conditions: ep.Conditions}
		}
	}
	return out
}

// slimNode keeps the addresses and spec.unschedulable: a node's heartbeats and conditions wake
// nothing.
func slimNode(o *corev1.Node) *corev1.Node {
	out := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion}}
	out.Spec.Unschedulable = o.Spec.Unschedulable
	for _, a := range o.Status.Addresses {
		if a.Type == corev1.NodeExternalIP || a.Type == corev1.NodeInternalIP {
			out.Status.Addresses = append(out.Status.Addresses, a)
		}
	}
	return out
}

var _ cache.TransformFunc = (&slimmer{}).Transform
