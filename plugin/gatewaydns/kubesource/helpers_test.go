package kubesource

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// goroutines returns the stacks of the running goroutines by id.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		header, _, _ := bytes.Cut(g, []byte("\n"))
		fields := strings.Fields(string(header)) // goroutine N [state]:
		if len(fields) >= 2 && fields[0] == "goroutine" {
			out[fields[1]] = string(g)
		}
	}
	return out
}

// leakMarkers identify goroutines that a Watcher (or what it starts) runs.
var leakMarkers = []string{
	"gatewaydns/plugin/gatewaydns/kubesource.(*Watcher)",
	"k8s.io/client-go/tools/cache",
	"k8s.io/client-go/tools/record",
	"k8s.io/client-go/util/workqueue",
	"k8s.io/apimachinery/pkg/watch",
	"sigs.k8s.io/gateway-api/pkg/client",
}

// checkNoLeaks fails the test when goroutines of the kinds a Watcher starts, absent from
// before, are still running after a settle time.
func checkNoLeaks(t *testing.T, before map[string]string) {
	t.Helper()
	checkNoLeaksWithin(t, before, 15*time.Second)
}

// checkNoLeaksWithin is checkNoLeaks with a settle time of settle.
func checkNoLeaksWithin(t *testing.T, before map[string]string, settle time.Duration) {
	t.Helper()
	deadline := time.Now().Add(settle)
	for {
		var leaked []string
		for id, stack := range goroutines() {
			if _, old := before[id]; old {
				continue
			}
			for _, m := range leakMarkers {
				if strings.Contains(stack, m) {
					leaked = append(leaked, stack)
					break
				}
			}
		}
		if len(leaked) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left %v after Stop:\n%s", len(leaked), settle, strings.Join(leaked, "\n\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last state: %s", timeout, what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// recordingObserver records what a Watcher reports.
type recordingObserver struct {
	mu       sync.Mutex
	served   map[string][]bool
	rejected map[string]int // kind/cause -> count
	current  map[string]int // kind/cause -> last Rejecting
}

func newRecordingObserver() *recordingObserver {
	return &recordingObserver{served: map[string][]bool{}, rejected: map[string]int{}, current: map[string]int{}}
}

func (o *recordingObserver) KindServed(kind, _ string, served bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.served[kind] = append(o.served[kind], served)
}

func (o *recordingObserver) Rejected(kind string, cause source.Cause) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rejected[kind+"/"+string(cause)]++
}

func (o *recordingObserver) Rejecting(kind string, cause source.Cause, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.current[kind+"/"+string(cause)] = n
}

func (o *recordingObserver) rejecting(kind string, cause source.Cause) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.current[kind+"/"+string(cause)]
}

func (o *recordingObserver) servedHistory(kind string) []bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]bool(nil), o.served[kind]...)
}

func (o *recordingObserver) rejections(kind string, cause source.Cause) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.rejected[kind+"/"+string(cause)]
}

// changeLog collects the names handed to OnChange.
type changeLog struct {
	mu    sync.Mutex
	names map[string]int
}

func (c *changeLog) OnChange(names []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.names == nil {
		c.names = map[string]int{}
	}
	for _, n := range names {
		c.names[n]++
	}
}

func (c *changeLog) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.names[name]
}

// endpointIs returns a condition: name is published with exactly these targets (none: absent).
func endpointIs(w *Watcher, name string, targets ...string) func() (bool, string) {
	return func() (bool, string) {
		ep, ok := w.Desired().Endpoint(name)
		if len(targets) == 0 {
			return !ok, name + " -> " + strings.Join(ep.Targets, ",")
		}
		if !ok {
			return false, name + " absent"
		}
		return strings.Join(ep.Targets, ",") == strings.Join(targets, ","), name + " -> " + strings.Join(ep.Targets, ",")
	}
}

// warningEvents returns the Warning Events in namespace on the object kind/name with reason.
func warningEvents(t *testing.T, kube kubernetes.Interface, namespace, kind, name, reason string) []corev1.Event {
	t.Helper()
	list, err := kube.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing events: %v", err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Kind == kind &&
			e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// Object builders shared by the tests.

func ptr[T any](v T) *T { return &v }

func listener(name string, proto gatewayv1.ProtocolType, port int32, hostname string, from gatewayv1.FromNamespaces, sel map[string]string) gatewayv1.Listener {
	l := gatewayv1.Listener{Name: gatewayv1.SectionName(name), Protocol: proto, Port: gatewayv1.PortNumber(port)}
	if hostname != "" {
		l.Hostname = ptr(gatewayv1.Hostname(hostname))
	}
	if proto == gatewayv1.TLSProtocolType {
		l.TLS = &gatewayv1.ListenerTLSConfig{Mode: ptr(gatewayv1.TLSModePassthrough)}
	}
	l.AllowedRoutes = &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr(from)}}
	if sel != nil {
		l.AllowedRoutes.Namespaces.Selector = &metav1.LabelSelector{MatchLabels: sel}
	}
	return l
}

func newGateway(namespace, name string, listeners ...gatewayv1.Listener) *gatewayv1.Gateway {
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: "gc", Listeners: listeners},
	}
}

func ipAddresses(ips ...string) []gatewayv1.GatewayStatusAddress {
	var out []gatewayv1.GatewayStatusAddress
	for _, ip := range ips {
		out = append(out, gatewayv1.GatewayStatusAddress{Type: ptr(gatewayv1.IPAddressType), Value: ip})
	}
	return out
}

func parentRef(namespace, name, section string) gatewayv1.ParentReference {
	p := gatewayv1.ParentReference{Name: gatewayv1.ObjectName(name), Namespace: ptr(gatewayv1.Namespace(namespace))}
	if section != "" {
		p.SectionName = ptr(gatewayv1.SectionName(section))
	}
	return p
}

func hostnames(hs ...string) []gatewayv1.Hostname {
	var out []gatewayv1.Hostname
	for _, h := range hs {
		out = append(out, gatewayv1.Hostname(h))
	}
	return out
}

const controllerName = "example.com/gateway-controller"

// acceptedBy is a route status with Accepted=True for each parentRef.
func acceptedBy(refs ...gatewayv1.ParentReference) gatewayv1.RouteStatus {
	var st gatewayv1.RouteStatus
	for _, r := range refs {
		st.Parents = append(st.Parents, gatewayv1.RouteParentStatus{
			ParentRef: r, ControllerName: controllerName,
			Conditions: []metav1.Condition{{
				Type: string(gatewayv1.RouteConditionAccepted), Status: metav1.ConditionTrue,
				Reason: string(gatewayv1.RouteReasonAccepted), Message: "accepted",
				LastTransitionTime: metav1.Now(),
			}},
		})
	}
	return st
}
