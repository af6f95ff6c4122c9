package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
)

// WaitObservedGeneration waits until the DNSEndpoint name's status.observedGeneration is its
// generation: the writer read this version of it and patched its status.
func WaitObservedGeneration(t testing.TB, res dynamic.ResourceInterface, name string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(100 * time.Millisecond) {
		u, err := res.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		if og == u.GetGeneration() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("DNSEndpoint %s: status.observedGeneration %d, generation %d", name, og, u.GetGeneration())
		}
	}
}

// WaitEvent polls until a Warning Event with reason is on the object, and returns its message.
func WaitEvent(t testing.TB, k8s *gatewayfixture.Cluster, namespace, kind, name, reason string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if evs := k8s.WarningEvents(namespace, kind, name, reason); len(evs) > 0 {
			return evs[0].Message
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Warning Event %q on %s %s/%s within %s", reason, kind, namespace, name, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
