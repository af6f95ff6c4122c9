package kubesource

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// An informer's list is the request the reflector asks for (resourceVersion 0, which the watch
// cache answers whole), then the pages a server without a watch cache makes, each read on at
// the continuation alone; every object comes out slimmed, in order, at the version of the first
// page; an error status comes back as the API error it is.
func TestStreamedListReadsWhatTheReflectorAsksAndSlimsEachObject(t *testing.T) {
	const perPage, pages = 3, 2
	var queries []url.Values
	expired := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.Query())
		if want := "/apis/gateway.networking.k8s.io/v1/namespaces/apps/httproutes"; r.URL.Path != want {
			t.Errorf("path %s, want %s", r.URL.Path, want)
		}
		w.Header().Set("Content-Type", "application/json")
		if expired {
			w.WriteHeader(http.StatusGone)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}`)
			return
		}
		page := 0
		if c := r.URL.Query().Get("continue"); c != "" {
			page, _ = strconv.Atoi(c)
		}
		next := ""
		if page+1 < pages {
			next = strconv.Itoa(page + 1)
		}
		fmt.Fprintf(w, `{"kind":"HTTPRouteList","apiVersion":"gateway.networking.k8s.io/v1","metadata":{"resourceVersion":"%d","continue":%q},"items":[`, 42+page, next)
		for i := range perPage {
			if i > 0 {
				fmt.Fprint(w, ",")
			}
			fmt.Fprintf(w, benchRouteJSON, page*perPage+i, 7, i, i, 1, 1)
		}
		fmt.Fprint(w, "]}")
	}))
	defer srv.Close()
	gw, err := gwclient.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rc := gw.GatewayV1().RESTClient().(*rest.RESTClient)
	s := newSlimmer(&source.Config{})
	newRoute := func() k8sruntime.Object { return &gatewayv1.HTTPRoute{} }

	got, err := s.streamedList(context.Background(), rc, "httproutes", "apps", newRoute, metav1.ListOptions{ResourceVersion: "0", Limit: 500, LabelSelector: "a=b"})
	if err != nil {
		t.Fatal(err)
	}
	items, _ := meta.ExtractList(got)
	m, _ := meta.ListAccessor(got)
	if len(items) != perPage*pages || m.GetResourceVersion() != "42" {
		t.Fatalf("%d objects at version %q, want %d at 42 (the first page's)", len(items), m.GetResourceVersion(), perPage*pages)
	}
	for i, it := range items {
		r := it.(*gatewayv1.HTTPRoute)
		if r.Name != fmt.Sprintf("route-%d", i) || r.ManagedFields != nil || r.Spec.Rules != nil || len(r.Spec.Hostnames) != 1 {
			t.Errorf("object %d = %s, %+v: not in order, or not slimmed", i, r.Name, r)
		}
	}
	want := []url.Values{
		{"resourceVersion": {"0"}, "limit": {"500"}, "labelSelector": {"a=b"}},
		{"continue": {"1"}, "limit": {"500"}, "labelSelector": {"a=b"}},
	}
	if !reflect.DeepEqual(queries, want) {
		t.Errorf("queries %v, want %v", queries, want)
	}

	expired = true
	if _, err := s.streamedList(context.Background(), rc, "httproutes", "apps", newRoute, metav1.ListOptions{}); !apierrors.IsResourceExpired(err) {
		t.Errorf("a 410 Expired came back as %v", err)
	}
}

// decodeList hands on each object before it reads the next: the response is never held whole.
func TestDecodeListHandsOnEachObjectBeforeReadingTheNext(t *testing.T) {
	pr, pw := io.Pipe()
	handed := make(chan string)
	done := make(chan error, 1)
	var lm metav1.ListMeta
	go func() {
		done <- decodeList(pr, &lm, func() k8sruntime.Object { return &gatewayv1.HTTPRoute{} }, func(o k8sruntime.Object) {
			handed <- o.(*gatewayv1.HTTPRoute).Name
		})
	}()
	write := func(s string) {
		if _, err := io.WriteString(pw, s); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"apiVersion":"gateway.networking.k8s.io/v1","items":[` + fmt.Sprintf(benchRouteJSON, 0, 1, 0, 0, 0, 0) + `,`)
	// The second object is not written yet: the first must come out now.
	if name := <-handed; name != "route-0" {
		t.Fatalf("first object %s", name)
	}
	write(fmt.Sprintf(benchRouteJSON, 1, 1, 1, 1, 0, 0) + `],"kind":"HTTPRouteList","metadata":{"resourceVersion":"9"}}`)
	if name := <-handed; name != "route-1" {
		t.Fatalf("second object %s", name)
	}
	pw.Close()
	if err := <-done; err != nil || lm.ResourceVersion != "9" {
		t.Fatalf("err %v, metadata %+v", err, lm)
	}
	for _, bad := range []string{`[]`, `{"items":{}}`, `{"items":[{"metadata":{"name":1}}]}`, `{"items":[`} {
		if err := decodeList(strings.NewReader(bad), &lm, func() k8sruntime.Object { return &gatewayv1.HTTPRoute{} }, func(k8sruntime.Object) {}); err == nil {
			t.Errorf("%s decoded without an error", bad)
		}
	}
	if err := decodeList(strings.NewReader(`{"items":null}`), &lm, func() k8sruntime.Object { return &gatewayv1.HTTPRoute{} }, func(k8sruntime.Object) {}); err != nil {
		t.Errorf("items null: %v", err)
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
