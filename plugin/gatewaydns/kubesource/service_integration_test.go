package kubesource

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// The Service integration test plays the controllers' part by hand, as the other integration
// tests do: the cloud provider's (status.loadBalancer), the EndpointSlice controller's (slices
// labelled with their Service) and the kubelets' (Nodes with addresses).

func (c *cluster) service(namespace, name string, typ corev1.ServiceType, annotations map[string]string, mods ...func(*corev1.Service)) *corev1.Service {
	c.t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations},
		Spec: corev1.ServiceSpec{Type: typ, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
	for _, m := range mods {
		m(svc)
	}
	created, err := c.kube.CoreV1().Services(namespace).Create(c.ctx, svc, metav1.CreateOptions{})
	c.must(err)
	return created
}

func (c *cluster) loadBalancerStatus(namespace, name string, ips ...string) {
	c.t.Helper()
	svc, err := c.kube.CoreV1().Services(namespace).Get(c.ctx, name, metav1.GetOptions{})
	c.must(err)
	svc.Status.LoadBalancer.Ingress = nil
	for _, ip := range ips {
		svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	_, err = c.kube.CoreV1().Services(namespace).UpdateStatus(c.ctx, svc, metav1.UpdateOptions{})
	c.must(err)
}

// pod is what the EndpointSlice controller reads from a pod to write its endpoint.
type pod struct {
	ip, hostname, node string
	ready              bool // the pod's Ready condition
	terminating        bool // the pod has a deletionTimestamp
}

// endpointSlice writes the slice of a Service as the EndpointSlice controller writes it
// (k8s.io/endpointslice podToEndpoint): every condition set, serving from the pod's readiness,
// terminating from its deletion, ready as serving and not terminating; the hostname of a pod
// whose subdomain is the Service; the pod's node; the labels that tie the slice to its Service.
func (c *cluster) endpointSlice(namespace, service, name string, pods ...pod) {
	c.t.Helper()
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
			discoveryv1.LabelServiceName: service,
			discoveryv1.LabelManagedBy:   "endpointslice-controller.k8s.io",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	for _, p := range pods {
		ep := discoveryv1.Endpoint{Addresses: []string{p.ip}, NodeName: ptr(p.node), Conditions: discoveryv1.EndpointConditions{
			Ready:       ptr(p.ready && !p.terminating),
			Serving:     ptr(p.ready),
			Terminating: ptr(p.terminating),
		}}
		if p.hostname != "" {
			ep.Hostname = ptr(p.hostname)
		}
		es.Endpoints = append(es.Endpoints, ep)
	}
	slices := c.kube.DiscoveryV1().EndpointSlices(namespace)
	cur, err := slices.Get(c.ctx, name, metav1.GetOptions{})
	if err == nil {
		es.ResourceVersion = cur.ResourceVersion
		_, err = slices.Update(c.ctx, es, metav1.UpdateOptions{})
	} else {
		_, err = slices.Create(c.ctx, es, metav1.CreateOptions{})
	}
	c.must(err)
}

// node creates or updates a Node with an InternalIP and an ExternalIP address.
func (c *cluster) node(name, internal, external string, unschedulable bool) {
	c.t.Helper()
	n, err := c.kube.CoreV1().Nodes().Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		n, err = c.kube.CoreV1().Nodes().Create(c.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		c.must(err)
	}
	n.Spec.Unschedulable = unschedulable
	n, err = c.kube.CoreV1().Nodes().Update(c.ctx, n, metav1.UpdateOptions{})
	c.must(err)
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: internal}, {Type: corev1.NodeExternalIP, Address: external}}
	_, err = c.kube.CoreV1().Nodes().UpdateStatus(c.ctx, n, metav1.UpdateOptions{})
	c.must(err)
}

// TestIntegrationServices runs the service source against a real kube-apiserver: a
// LoadBalancer Service is reported until its load balancer has an address and then published;
// a ClusterIP Service's internal-hostname gets the cluster IP the API server allocated; a
// headless Service follows its EndpointSlices (readiness, per-pod names, a slice deleted); a
// NodePort Service follows the nodes (a node added, a node cordoned), its access=private
// annotation (legacy prefix) takes their internal addresses, and with externalTrafficPolicy
// Local it follows the nodes of its endpoints; an invalid hostname is a Warning Event on its
// Service while its valid ones publish; a deleted Service's names
// go; and the default sources read no Service at all.
func TestIntegrationServices(t *testing.T) {
	c := startCluster(t)
	c.namespace("shop", nil)
	host := func(h string) map[string]string { return map[string]string{source.AnnotationPrefix + "hostname": h} }

	c.node("n1", "10.0.0.1", "203.0.113.1", false)
	c.service("shop", "api", corev1.ServiceTypeLoadBalancer, host("api.example.com"))
	db := c.service("shop", "db", corev1.ServiceTypeClusterIP, map[string]string{source.AnnotationPrefix + "internal-hostname": "db.internal.example.com"})
	c.service("shop", "web", corev1.ServiceTypeClusterIP, host("web.example.com"), func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone })
	c.endpointSlice("shop", "web", "web-abc", pod{ip: "10.244.0.1", hostname: "web-0", node: "n1", ready: true}, pod{ip: "10.244.0.2", hostname: "web-1", node: "n1"})
	np := c.service("shop", "np", corev1.ServiceTypeNodePort, host("np.example.com"))
	// The legacy annotation prefix, as external-dns v0.21.0 reads by default, and access=private.
	c.service("shop", "np-private", corev1.ServiceTypeNodePort, map[string]string{
		source.LegacyAnnotationPrefix + "hostname": "np-private.example.com", source.LegacyAnnotationPrefix + "access": "private"})
	c.service("shop", "odd", corev1.ServiceTypeLoadBalancer, host("bad_name.example.com,odd.example.com"))
	c.loadBalancerStatus("shop", "odd", "192.0.2.20")

	obs := newRecordingObserver()
	w := c.watch(source.Config{}, obs, source.KindService)
	waitSynced(t, w)
	if _, ok := w.Kinds()[KindNode]; !ok {
		t.Errorf("watching %v: no Node informer, though NodePort Services are read", w.Kinds())
	}

	eventually(t, waitFor, "the pending load balancer reported", func() (bool, string) {
		n := len(warningEvents(t, c.kube, "shop", source.KindService, "api", string(source.CauseNoTargets)))
		return n == 1, "NoTargets Events on shop/api"
	})
	eventually(t, waitFor, "db internal name", endpointIs(w, "db.internal.example.com", db.Spec.ClusterIP))
	eventually(t, waitFor, "headless web", endpointIs(w, "web.example.com", "10.244.0.1"))
	eventually(t, waitFor, "web-0", endpointIs(w, "web-0.web.example.com", "10.244.0.1"))
	eventually(t, waitFor, "np", endpointIs(w, "np.example.com", "203.0.113.1"))
	eventually(t, waitFor, "np-private at the internal address", endpointIs(w, "np-private.example.com", "10.0.0.1"))
	eventually(t, waitFor, "odd's valid name", endpointIs(w, "odd.example.com", "192.0.2.20"))
	eventually(t, waitFor, "odd's invalid name reported", func() (bool, string) {
		evs := warningEvents(t, c.kube, "shop", source.KindService, "odd", string(source.CauseInvalidHostname))
		if len(evs) != 1 {
			return false, fmt.Sprintf("%d InvalidHostname Events on shop/odd", len(evs))
		}
		return evs[0].InvolvedObject.APIVersion == "v1" && strings.HasPrefix(evs[0].Message, "bad_name.example.com: "), evs[0].Message
	})
	if n := obs.rejections(source.KindService, source.CauseInvalidHostname); n != 1 {
		t.Errorf("InvalidHostname counted %d times on Services, want 1", n)
	}
	if _, ok := w.Desired().Endpoint("api.example.com"); ok {
		t.Errorf("api.example.com published before its load balancer has an address")
	}
	wantSRV := fmt.Sprintf("SRV 0 50 %d np.example.com", np.Spec.Ports[0].NodePort)
	if ep, ok := w.Desired().Endpoint("_np._tcp.np.example.com"); !ok || len(ep.Records) != 1 || ep.Records[0].String() != wantSRV {
		t.Errorf("the node port's SRV record: %+v, want %s", ep, wantSRV)
	}

	c.loadBalancerStatus("shop", "api", "192.0.2.10", "2001:db8::10")
	eventually(t, waitFor, "api once its load balancer is up", endpointIs(w, "api.example.com", "192.0.2.10", "2001:db8::10"))

	step := time.Now()
	c.endpointSlice("shop", "web", "web-abc", pod{ip: "10.244.0.1", hostname: "web-0", node: "n1", ready: true}, pod{ip: "10.244.0.2", hostname: "web-1", node: "n1", ready: true})
	eventually(t, waitFor, "web-1 ready", endpointIs(w, "web.example.com", "10.244.0.1", "10.244.0.2"))
	eventually(t, waitFor, "web-1 name", endpointIs(w, "web-1.web.example.com", "10.244.0.2"))
	t.Logf("an EndpointSlice change published in %v", time.Since(step).Round(time.Millisecond))
	c.must(c.kube.DiscoveryV1().EndpointSlices("shop").Delete(c.ctx, "web-abc", metav1.DeleteOptions{}))
	eventually(t, waitFor, "web gone with its slice", endpointIs(w, "web.example.com"))
	eventually(t, waitFor, "web-0 gone with its slice", endpointIs(w, "web-0.web.example.com"))

	c.node("n2", "10.0.0.2", "203.0.113.2", false)
	eventually(t, waitFor, "np on the new node", endpointIs(w, "np.example.com", "203.0.113.1", "203.0.113.2"))
	eventually(t, waitFor, "np-private on the new node", endpointIs(w, "np-private.example.com", "10.0.0.1", "10.0.0.2"))

	// externalTrafficPolicy Local: the nodes running a ready endpoint, else those running a
	// serving terminating one, as kube-proxy routes the traffic.
	c.service("shop", "local", corev1.ServiceTypeNodePort, host("local.example.com"), func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	})
	c.endpointSlice("shop", "local", "local-abc", pod{ip: "10.244.1.1", node: "n1", ready: true}, pod{ip: "10.244.1.2", node: "n2"})
	eventually(t, waitFor, "local on the node with the ready pod", endpointIs(w, "local.example.com", "203.0.113.1"))
	c.endpointSlice("shop", "local", "local-abc", pod{ip: "10.244.1.1", node: "n1", ready: true}, pod{ip: "10.244.1.2", node: "n2", ready: true})
	eventually(t, waitFor, "local on both nodes once both pods are ready", endpointIs(w, "local.example.com", "203.0.113.1", "203.0.113.2"))
	c.endpointSlice("shop", "local", "local-abc", pod{ip: "10.244.1.1", node: "n1", ready: true, terminating: true}, pod{ip: "10.244.1.2", node: "n2", ready: true})
	eventually(t, waitFor, "local leaves the node whose pod terminates", endpointIs(w, "local.example.com", "203.0.113.2"))
	c.endpointSlice("shop", "local", "local-abc", pod{ip: "10.244.1.1", node: "n1", ready: true, terminating: true}, pod{ip: "10.244.1.2", node: "n2"})
	eventually(t, waitFor, "local on the terminating but serving pod's node when no pod is ready",
		endpointIs(w, "local.example.com", "203.0.113.1"))

	c.node("n1", "10.0.0.1", "203.0.113.1", true)
	eventually(t, waitFor, "np leaves the cordoned node", endpointIs(w, "np.example.com", "203.0.113.2"))

	c.must(c.kube.CoreV1().Services("shop").Delete(c.ctx, "api", metav1.DeleteOptions{}))
	eventually(t, waitFor, "api gone with its Service", endpointIs(w, "api.example.com"))
	if n := obs.rejections(source.KindService, source.CauseNoTargets); n < 1 {
		t.Errorf("NoTargets counted %d times on Services", n)
	}

	// The default sources do not read Services: a stanza written before they existed must not
	// start publishing every annotated Service.
	d := c.watch(source.Config{}, nil)
	waitSynced(t, d)
	for _, k := range []string{source.KindService, KindEndpointSlice, KindNode} {
		if _, ok := d.Kinds()[k]; ok {
			t.Errorf("the default sources watch %s", k)
		}
	}
	if _, ok := d.Desired().Endpoint("np.example.com"); ok {
		t.Errorf("the default sources published a Service")
	}
}
