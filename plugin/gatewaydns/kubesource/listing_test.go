package kubesource

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// An informer's list is read in pages at the latest version, whatever version and limit the
// reflector asks for (0 and 500: the watch cache would answer whole), and hands on every object
// of every page slimmed, at the resource version of the pages.
func TestListPagesReadsPagesAtTheLatestVersionAndSlimsThem(t *testing.T) {
	const n = 2*listPageSize + 7
	var asked []metav1.ListOptions
	list := func(_ context.Context, opts metav1.ListOptions) (k8sruntime.Object, error) {
		asked = append(asked, opts)
		start := 0
		if opts.Continue != "" {
			fmt.Sscan(opts.Continue, &start)
		}
		page := &gatewayv1.HTTPRouteList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}}
		for i := start; i < min(start+int(opts.Limit), n); i++ {
			page.Items = append(page.Items, gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: fmt.Sprint(i),
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}})
		}
		if end := start + int(opts.Limit); end < n {
			page.Continue = fmt.Sprint(end)
		}
		return page, nil
	}
	s := newSlimmer(&source.Config{})
	got, err := s.listPages(context.Background(), list, metav1.ListOptions{ResourceVersion: "0", Limit: 500, LabelSelector: "a=b"})
	if err != nil {
		t.Fatal(err)
	}
	items, err := meta.ExtractList(got)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := meta.ListAccessor(got)
	if len(items) != n || m.GetResourceVersion() != "42" {
		t.Fatalf("%d items at version %q, want %d at 42", len(items), m.GetResourceVersion(), n)
	}
	for i, it := range items {
		r := it.(*gatewayv1.HTTPRoute)
		if r.Name != fmt.Sprint(i) || r.ManagedFields != nil {
			t.Fatalf("item %d = %s with managed fields %v: not in order, or not slimmed", i, r.Name, r.ManagedFields)
		}
	}
	if len(asked) != 3 {
		t.Fatalf("%d requests, want 3", len(asked))
	}
	for i, o := range asked {
		if o.ResourceVersion != "" || o.ResourceVersionMatch != "" || o.Limit != listPageSize || o.LabelSelector != "a=b" {
			t.Errorf("request %d asked %+v, want the latest version, limit %d and the selector", i, o, listPageSize)
		}
	}
}

// A slimmed watch hands on its events with slimmed objects, ends when the watch it reads ends,
// and at Stop ends its goroutine even with an event nobody reads.
func TestSlimWatchSlimsEventsAndStops(t *testing.T) {
	s := newSlimmer(&source.Config{})
	in := watch.NewFake()
	w := newSlimWatch(in, s.Transform)
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "r", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	go in.Add(route)
	e := <-w.ResultChan()
	if r, ok := e.Object.(*gatewayv1.HTTPRoute); !ok || e.Type != watch.Added || r.Name != "r" || r.ManagedFields != nil {
		t.Fatalf("event %+v: not the route slimmed", e)
	}
	status := &metav1.Status{Status: metav1.StatusFailure, Code: 410}
	go in.Error(status)
	if e := <-w.ResultChan(); e.Type != watch.Error || e.Object != status {
		t.Fatalf("event %+v: the error status changed", e)
	}
	in.Stop()
	if _, open := <-w.ResultChan(); open {
		t.Fatal("the slimmed watch stays open after the watch it reads ended")
	}

	before := runtime.NumGoroutine()
	in = watch.NewFake()
	w = newSlimWatch(in, s.Transform)
	in.Add(route) // returns once the goroutine has it, which then waits to hand it on
	w.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines 5s after Stop, %d before the watch", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
