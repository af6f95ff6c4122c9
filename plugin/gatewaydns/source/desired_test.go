package source

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

func TestDesiredRemergesOnlyTouchedNames(t *testing.T) {
	d := NewDesired()
	a := record.ObjectRef{Kind: KindHTTPRoute, Namespace: "app", Name: "a"}
	b := record.ObjectRef{Kind: KindIngress, Namespace: "app", Name: "b"}

	steps := []struct {
		name        string
		apply       func() []string
		wantChanged []string
		want        []string // fmtEndpoints of d.Endpoints()
		wantRej     []string // fmtRejections of d.Conflicts()
	}{
		{name: "first object publishes its names",
			apply: func() []string {
				return d.Set(a, []Claim{claim("", "", 2, "x.example.com", 0, "10.0.0.1"), claim("", "", 2, "y.example.com", 0, "lb.example.net")})
			},
			wantChanged: []string{"x.example.com", "y.example.com"},
			want:        []string{"x.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/a", "y.example.com -> lb.example.net ttl=0 from HTTPRoute/app/a"}},
		{name: "setting the same claims again changes nothing",
			apply: func() []string {
				return d.Set(a, []Claim{claim("", "", 2, "y.example.com", 0, "lb.example.net"), claim("", "", 2, "x.example.com", 0, "10.0.0.1")})
			},
			wantChanged: nil,
			want:        []string{"x.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/a", "y.example.com -> lb.example.net ttl=0 from HTTPRoute/app/a"}},
		{name: "a second object on x unions, its conflicting CNAME on y is reported",
			apply: func() []string {
				return d.Set(b, []Claim{claim("", "", 1, "x.example.com", 0, "10.0.0.2"), claim("", "", 1, "y.example.com", 0, "other.example.net"), claim("", "", 1, "z.example.com", 0, "10.0.0.3")})
			},
			wantChanged: []string{"x.example.com", "y.example.com", "z.example.com"},
			want: []string{"x.example.com -> 10.0.0.1,10.0.0.2 ttl=0 from HTTPRoute/app/a,Ingress/app/b",
				"y.example.com -> lb.example.net ttl=0 from HTTPRoute/app/a", "z.example.com -> 10.0.0.3 ttl=0 from Ingress/app/b"},
			wantRej: []string{"Ingress/app/b y.example.com Conflict"}},
		{name: "changing one object touches only its old and new names",
			apply: func() []string {
				return d.Set(b, []Claim{claim("", "", 1, "y.example.com", 0, "other.example.net"), claim("", "", 1, "z.example.com", 0, "10.0.0.3")})
			},
			wantChanged: []string{"x.example.com"},
			want: []string{"x.example.com -> 10.0.0.1 ttl=0 from HTTPRoute/app/a",
				"y.example.com -> lb.example.net ttl=0 from HTTPRoute/app/a", "z.example.com -> 10.0.0.3 ttl=0 from Ingress/app/b"},
			wantRej: []string{"Ingress/app/b y.example.com Conflict"}},
		{name: "deleting the winner hands the CNAME to the loser",
			apply:       func() []string { return d.Delete(a) },
			wantChanged: []string{"x.example.com", "y.example.com"},
			want:        []string{"y.example.com -> other.example.net ttl=0 from Ingress/app/b", "z.example.com -> 10.0.0.3 ttl=0 from Ingress/app/b"}},
		{name: "setting no claims deletes the object",
			apply:       func() []string { return d.Set(b, nil) },
			wantChanged: []string{"y.example.com", "z.example.com"}},
	}
	for _, s := range steps {
		changed := s.apply()
		assertLines(t, s.name+": changed", changed, s.wantChanged)
		assertLines(t, s.name+": endpoints", fmtEndpoints(d.Endpoints()), s.want)
		assertLines(t, s.name+": conflicts", fmtRejections(d.Conflicts()), s.wantRej)
	}
}

func TestDesiredAgreesWithMerge(t *testing.T) {
	var all []Claim
	d := NewDesired()
	for i := range 20 {
		ref := record.ObjectRef{Kind: KindHTTPRoute, Namespace: "app", Name: fmt.Sprintf("r%02d", i)}
		var cs []Claim
		for j := range 3 {
			target := fmt.Sprintf("10.0.%d.%d", i%3, j)
			if (i+j)%4 == 0 {
				target = fmt.Sprintf("lb%d.example.net", i%2)
			}
			c := Claim{Name: fmt.Sprintf("n%d.example.com", (i*j)%7), Targets: []string{target}, TTL: uint32(i % 3 * 30), Source: ref, Created: t0}
			cs = append(cs, c)
		}
		d.Set(ref, cs)
		// Merge sees one claim per object and name, as Set stores it.
		stored := d.Claims(ref)
		all = append(all, stored...)
	}
	eps, rej := Merge(all)
	assertLines(t, "endpoints", fmtEndpoints(d.Endpoints()), fmtEndpoints(eps))
	assertLines(t, "conflicts", fmtRejections(d.Conflicts()), fmtRejections(rej))
	if len(eps) == 0 || len(rej) == 0 {
		t.Fatalf("fixture should yield endpoints and conflicts, got %d and %d", len(eps), len(rej))
	}
}

func TestDesiredCombinesClaimsOnOneNameAndOwnsSource(t *testing.T) {
	d := NewDesired()
	ref := record.ObjectRef{Kind: KindHTTPRoute, Namespace: "app", Name: "a"}
	d.Set(ref, []Claim{claim(KindIngress, "wrong", 0, "x.example.com", 60, "10.0.0.2"), claim(KindIngress, "wrong", 0, "x.example.com", 30, "10.0.0.1")})
	ep, ok := d.Endpoint("x.example.com")
	got := fmtEndpoints([]record.Endpoint{ep})
	assertLines(t, "endpoint", got, []string{"x.example.com -> 10.0.0.1,10.0.0.2 ttl=30 from HTTPRoute/app/a"})
	if !ok {
		t.Error("Endpoint reported the name as absent")
	}
	ep.Targets[0] = "mutated"
	if again, _ := d.Endpoint("x.example.com"); again.Targets[0] != "10.0.0.1" {
		t.Error("Endpoint returned internal state")
	}
	if _, ok := d.Endpoint("nope.example.com"); ok {
		t.Error("Endpoint found a name never set")
	}
}

func TestDesiredConcurrentUse(t *testing.T) {
	d := NewDesired()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			ref := record.ObjectRef{Kind: KindIngress, Namespace: "app", Name: fmt.Sprint(i)}
			for j := range 50 {
				d.Set(ref, []Claim{{Name: "x.example.com", Targets: []string{fmt.Sprintf("10.0.%d.%d", i, j%2)}}})
				_ = d.Endpoints()
				_ = d.NameConflicts("x.example.com")
			}
		})
	}
	wg.Wait()
	ep, _ := d.Endpoint("x.example.com")
	if len(ep.Sources) != 8 || !slices.IsSorted(ep.Targets) {
		t.Errorf("endpoint = %+v", ep)
	}
}
