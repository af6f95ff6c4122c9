package source

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestListenerChangeReplacesNamesAtOnce: when a route's sectionName or a listener's hostname
// changes, one recomputation of the route (one Desired.Set) withdraws the names of the old
// listener and publishes those of the new one, and reports both as changed, so the plan drops
// the old names in the same pass (external-dns #6639 keeps the old listener's names).
func TestListenerChangeReplacesNamesAtOnce(t *testing.T) {
	twoListeners := func(aHost, bHost string) *gatewayv1.Gateway {
		return gateway("app", "gw", []gatewayv1.Listener{listener("a", HTTP, 80, aHost), listener("b", HTTP, 8080, bHost)}, "10.0.0.1")
	}
	inherit := func(sec string) Route { return route(KindHTTPRoute, nil, ref("gw", section(sec))) }
	wild := func(sec string) Route {
		return route(KindHTTPRoute, []string{"*.example.com"}, ref("gw", section(sec)))
	}
	ls := func(host string) *gatewayv1.ListenerSet {
		return listenerSet("app", "ls", "infra", "gw", metav1.ConditionTrue, metav1.ConditionTrue, listener("a", HTTP, 80, host))
	}
	viaLS := route(KindHTTPRoute, nil, lsRef("ls"))

	type state struct {
		gw    *gatewayv1.Gateway
		ls    *gatewayv1.ListenerSet
		route Route
	}
	cases := []struct {
		name          string
		before, after state
		wantBefore    []string // names published before
		wantAfter     []string // names published after
	}{
		{name: "sectionName moves to another listener: its hostname replaces the old one's",
			before:     state{gw: twoListeners("a.example.com", "b.example.com"), route: inherit("a")},
			after:      state{gw: twoListeners("a.example.com", "b.example.com"), route: inherit("b")},
			wantBefore: []string{"a.example.com"}, wantAfter: []string{"b.example.com"}},
		{name: "sectionName moves: a wildcard route is narrowed to the new listener's hostname",
			before:     state{gw: twoListeners("a.example.com", "b.example.com"), route: wild("a")},
			after:      state{gw: twoListeners("a.example.com", "b.example.com"), route: wild("b")},
			wantBefore: []string{"a.example.com"}, wantAfter: []string{"b.example.com"}},
		{name: "sectionName is dropped: the route attaches to every listener",
			before:     state{gw: twoListeners("a.example.com", "b.example.com"), route: inherit("a")},
			after:      state{gw: twoListeners("a.example.com", "b.example.com"), route: route(KindHTTPRoute, nil, ref("gw"))},
			wantBefore: []string{"a.example.com"}, wantAfter: []string{"a.example.com", "b.example.com"}},
		{name: "the listener's hostname changes: the new hostname replaces the old",
			before:     state{gw: twoListeners("a.example.com", "b.example.com"), route: inherit("a")},
			after:      state{gw: twoListeners("new.example.com", "b.example.com"), route: inherit("a")},
			wantBefore: []string{"a.example.com"}, wantAfter: []string{"new.example.com"}},
		{name: "the listener's hostname changes so that a route hostname no longer intersects: that name goes",
			before:     state{gw: twoListeners("*.apps.example.com", ""), route: route(KindHTTPRoute, []string{"x.apps.example.com", "y.web.example.com"}, ref("gw", section("a")))},
			after:      state{gw: twoListeners("*.web.example.com", ""), route: route(KindHTTPRoute, []string{"x.apps.example.com", "y.web.example.com"}, ref("gw", section("a")))},
			wantBefore: []string{"x.apps.example.com"}, wantAfter: []string{"y.web.example.com"}},
		{name: "the listener's hostname is removed: the route's own hostnames are published whole",
			before:     state{gw: twoListeners("a.example.com", ""), route: wild("a")},
			after:      state{gw: twoListeners("", ""), route: wild("a")},
			wantBefore: []string{"a.example.com"}, wantAfter: []string{"*.example.com"}},
		{name: "the listener the sectionName names is renamed away: every name goes",
			before:     state{gw: twoListeners("a.example.com", "b.example.com"), route: inherit("a")},
			after:      state{gw: gateway("app", "gw", []gatewayv1.Listener{listener("renamed", HTTP, 80, "a.example.com")}, "10.0.0.1"), route: inherit("a")},
			wantBefore: []string{"a.example.com"}},
		{name: "a ListenerSet entry's hostname changes: the new hostname replaces the old",
			before:     state{gw: lsGW(), ls: ls("old.a.example.com"), route: viaLS},
			after:      state{gw: lsGW(), ls: ls("new.a.example.com"), route: viaLS},
			wantBefore: []string{"old.a.example.com"}, wantAfter: []string{"new.a.example.com"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cfg Config
			d := NewDesired()
			claimsOf := func(s state) []Claim {
				var sets []*gatewayv1.ListenerSet
				if s.ls != nil {
					sets = append(sets, s.ls)
				}
				claims, _ := cfg.RouteClaimsWithListenerSets(s.route, lookup([]*gatewayv1.Gateway{s.gw}), lsLookup(sets), nil)
				return claims
			}
			ref := tc.before.route.Ref()
			d.Set(ref, claimsOf(tc.before))
			if got := d.Names(); !slices.Equal(got, tc.wantBefore) {
				t.Fatalf("before the change: published %v, want %v", got, tc.wantBefore)
			}
			changed := d.Set(ref, claimsOf(tc.after))
			if got := d.Names(); !slices.Equal(got, tc.wantAfter) {
				t.Errorf("after one recomputation: published %v, want %v", got, tc.wantAfter)
			}
			// Every name that came or went is handed to the plan by that same recomputation.
			var moved []string
			for _, n := range append(slices.Clone(tc.wantBefore), tc.wantAfter...) {
				if slices.Contains(tc.wantBefore, n) != slices.Contains(tc.wantAfter, n) {
					moved = append(moved, n)
				}
			}
			slices.Sort(moved)
			if !slices.Equal(changed, moved) {
				t.Errorf("the recomputation reported %s as changed, want %s", strings.Join(changed, ","), strings.Join(moved, ","))
			}
		})
	}
}
