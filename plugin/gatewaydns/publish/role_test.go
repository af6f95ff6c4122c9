package publish

import (
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/kubesource"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

// runningPublisher registers a publisher of owner whose sources have not synced and that
// counts as ready until readyUntil, as one started by a reload does; it needs no etcd or
// Kubernetes, and the test's end stops it.
func runningPublisher(t *testing.T, owner string, readyUntil time.Time) {
	t.Helper()
	client, err := store.NewClient(store.Config{Endpoints: []string{"http://127.0.0.1:1"}}) // connects in the background: never here
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	close(done)
	p := &publisher{cfg: &Config{Owner: owner}, kube: &kubesource.Watcher{}, client: client, cancel: func() {}, done: done}
	p.readyUntil.Store(readyUntil.UnixNano())
	key := t.Name() + "/" + owner
	if _, err := publishers.Acquire(key, func() (*publisher, error) { return p, nil }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := publishers.Release(key, p); err != nil {
			t.Error(err)
		}
	})
}

// On a reload the ready plugin asks the new stanza before its startup: a role not started
// yet is as ready as a running publisher of its owner, and that one, started by an earlier
// reload, is ready on its predecessor's behalf only until its bridge ends.
func TestRoleNotStartedIsAsReadyAsItsOwnersPublisher(t *testing.T) {
	for _, tc := range []struct {
		name    string
		running map[string]time.Duration // owner -> how long from now its publisher counts as ready
		want    bool
	}{
		{name: "nothing running: not ready", want: false},
		{name: "a ready publisher of the owner", running: map[string]time.Duration{"eu1": readyBridge}, want: true},
		{name: "a ready publisher of another owner", running: map[string]time.Duration{"us1": readyBridge}, want: false},
		{name: "a publisher of the owner whose bridge has ended, its sources not synced", running: map[string]time.Duration{"eu1": -time.Second}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for owner, d := range tc.running {
				runningPublisher(t, owner, time.Now().Add(d))
			}
			c := NewConfig()
			c.Owner = "eu1"
			if got := NewRole(c).Ready(); got != tc.want {
				t.Errorf("ready %v, want %v", got, tc.want)
			}
		})
	}
}
