package source

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

// TestDesiredFollowsMergeThroughRandomChanges sets and deletes the claims of a few objects on
// a few names at random, and after each change compares Desired with Merge of every claim then
// stored, and the names Set reported with those whose endpoint or conflicts differ from before:
// the incremental bookkeeping (claims kept once, per-name state sharing their slices, unchanged
// claims not merged again) must never drift from a merge from scratch.
func TestDesiredFollowsMergeThroughRandomChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 4))
	names := []string{"a.example.com", "b.example.com", "*.c.example.com", "d.example.com"}
	targets := []string{"10.0.0.1", "10.0.0.2", "2001:db8::1", "lb1.example.net", "lb2.example.net"}
	refs := make([]record.ObjectRef, 6)
	for i := range refs {
		refs[i] = record.ObjectRef{Kind: []string{KindHTTPRoute, KindIngress}[i%2], Namespace: "app", Name: fmt.Sprintf("o%d", i)}
	}
	d := NewDesired()
	current := map[record.ObjectRef][]Claim{}
	state := func() map[string]string { // name -> its endpoint and conflicts, as Merge gives them
		var all []Claim
		for _, ref := range refs {
			all = append(all, d.Claims(ref)...)
		}
		eps, rej := Merge(all)
		out := map[string]string{}
		for _, line := range fmtEndpoints(eps) {
			name, _, _ := strings.Cut(line, " ")
			out[name] += line
		}
		for _, r := range rej {
			out[r.Hostname] += fmt.Sprintf(" | %s %s", r.Cause, r) // the reason too
		}
		return out
	}
	before := state()
	for step := range 2000 {
		ref := refs[rng.IntN(len(refs))]
		var claims []Claim
		if rng.IntN(5) > 0 {
			for range rng.IntN(4) {
				c := Claim{Name: names[rng.IntN(len(names))], TTL: uint32(rng.IntN(3) * 30),
					Created: t0.Add(time.Duration(rng.IntN(3)) * time.Hour)}
				for range rng.IntN(3) { // none at times: a claim that changes no merge
					c.Targets = append(c.Targets, targets[rng.IntN(len(targets))])
				}
				claims = append(claims, c)
			}
		}
		changed := d.Set(ref, claims)
		current[ref] = claims
		after := state()
		var want []string
		for _, name := range names {
			if before[name] != after[name] {
				want = append(want, name)
			}
		}
		slices.Sort(want)
		assertLines(t, fmt.Sprintf("step %d: names changed", step), changed, want)
		var eps []string
		for _, name := range slices.Sorted(maps.Keys(after)) {
			if ep, ok := d.Endpoint(name); ok {
				eps = append(eps, fmtEndpoints([]record.Endpoint{ep})...)
			}
		}
		var all []Claim
		for _, ref := range refs {
			all = append(all, d.Claims(ref)...)
		}
		wantEps, wantRej := Merge(all)
		assertLines(t, fmt.Sprintf("step %d: endpoints", step), fmtEndpoints(d.Endpoints()), fmtEndpoints(wantEps))
		assertLines(t, fmt.Sprintf("step %d: endpoint by name", step), eps, fmtEndpoints(wantEps))
		var wantNames []string
		wantRecords := 0
		for _, ep := range wantEps {
			wantNames = append(wantNames, ep.Name)
			wantRecords += len(ep.Targets) + len(ep.Records)
		}
		assertLines(t, fmt.Sprintf("step %d: names", step), d.Names(), wantNames)
		if got := d.Records(); got != wantRecords {
			t.Errorf("step %d: Records() = %d, want %d", step, got, wantRecords)
		}
		if got := d.Conflicts(); !slices.Equal(got, wantRej) {
			t.Errorf("step %d: conflicts\n got: %v\nwant: %v", step, got, wantRej)
		}
		if t.Failed() {
			t.Fatalf("after setting %s to %+v", ref, claims)
		}
		before = after
	}
}

// storedClaim must hold every field of a Claim but Source: this conversion stops compiling when
// Claim gains a field that Desired would drop.
var _ = Claim(struct {
	Name    string
	Targets []string
	Records []record.Typed
	TTL     uint32
	Source  record.ObjectRef
	Created time.Time
	Policy  Policy
}{})
