package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
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
