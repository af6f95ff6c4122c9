package steer

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// owner builds an owner: id, region, addresses, of which down are held down, and its policy
// in the words of the annotations ("w90 p1 check").
func owner(id, region string, addrs, down int, policy string) Owner {
	o := Owner{ID: id, Region: region, Addrs: addrs, Down: down}
	for f := range strings.FieldsSeq(policy) {
		switch {
		case f == "check":
			o.Steering.HealthCheck = "tcp://:443"
		case f[0] == 'w':
			o.Steering.Weight, o.Steering.Weighted = atoi(f[1:]), true
		case f[0] == 'p':
			o.Steering.Priority = atoi(f[1:])
		}
	}
	return o
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// low and high are random numbers that draw the first and the last of the weighted owners.
const (
	low  uint64 = 0
	high uint64 = math.MaxUint64
)

func ids(owners []Owner, idx []int) string {
	var out []string
	for _, i := range idx {
		out = append(out, owners[i].ID)
	}
	return strings.Join(out, ",")
}

func TestChoose(t *testing.T) {
	eu, us := "eu", "us"
	for _, tc := range []struct {
		behaviour string
		owners    []Owner
		client    Client
		rnd       uint64
		want      string // the owners answered
		rule      Rule
		region    bool
	}{
		{behaviour: "no policy: the union of every owner, as today",
			owners: []Owner{owner("eu1", eu, 2, 0, ""), owner("us1", us, 1, 0, "")}, want: "eu1,us1", rule: RuleUnion},
		{behaviour: "the lowest priority answers alone",
			owners: []Owner{owner("eu1", eu, 1, 0, "p1"), owner("us1", us, 1, 0, "p2")}, want: "eu1", rule: RuleUnion},
		{behaviour: "no priority is priority 0, before a standby at 1",
			owners: []Owner{owner("eu1", eu, 1, 0, "p1"), owner("us1", us, 1, 0, "")}, want: "us1", rule: RuleUnion},
		{behaviour: "a primary that is down hands over to the next tier",
			owners: []Owner{owner("eu1", eu, 1, 1, "p1 check"), owner("us1", us, 1, 0, "p2")}, want: "us1", rule: RuleUnion},
		{behaviour: "an owner with some addresses down still answers (its healthy ones)",
			owners: []Owner{owner("eu1", eu, 3, 2, "p1 check"), owner("us1", us, 1, 0, "p2")}, want: "eu1", rule: RuleUnion},
		{behaviour: "every owner down: every owner, failing open",
			owners: []Owner{owner("eu1", eu, 1, 1, "p1 check"), owner("us1", us, 2, 2, "p2 check")}, want: "eu1,us1", rule: RuleFailOpen},
		{behaviour: "weights: a low draw takes the first",
			owners: []Owner{owner("eu1", eu, 1, 0, "w90"), owner("us1", us, 1, 0, "w10")}, rnd: low, want: "eu1", rule: RuleWeighted},
		{behaviour: "weights: a high draw takes the last",
			owners: []Owner{owner("eu1", eu, 1, 0, "w90"), owner("us1", us, 1, 0, "w10")}, rnd: high, want: "us1", rule: RuleWeighted},
		{behaviour: "weight 0 is never drawn while another owner is eligible",
			owners: []Owner{owner("eu1", eu, 1, 0, "w0"), owner("us1", us, 1, 0, "w10")}, rnd: low, want: "us1", rule: RuleWeighted},
		{behaviour: "weight 0 answers when nothing else is eligible",
			owners: []Owner{owner("eu1", eu, 1, 0, "w0"), owner("us1", us, 1, 1, "w10 check")}, rnd: high, want: "eu1", rule: RuleUnion},
		{behaviour: "weight 0 in the first tier: the next tier answers",
			owners: []Owner{owner("eu1", eu, 1, 0, "w0"), owner("us1", us, 1, 0, "p1")}, want: "us1", rule: RuleUnion},
		{behaviour: "every owner at weight 0: their union",
			owners: []Owner{owner("eu1", eu, 1, 0, "w0"), owner("us1", us, 1, 0, "w0")}, want: "eu1,us1", rule: RuleUnion},
		{behaviour: "an owner without a weight beside weighted ones counts 100",
			owners: []Owner{owner("eu1", eu, 1, 0, "w100"), owner("us1", us, 1, 0, "")}, rnd: high, want: "us1", rule: RuleWeighted},
		{behaviour: "weights are drawn within the lowest tier only",
			owners: []Owner{owner("eu1", eu, 1, 0, "w1 p0"), owner("us1", us, 1, 0, "w1000 p1")}, rnd: high, want: "eu1", rule: RuleWeighted},
		{behaviour: "a down owner takes no share of the draw",
			owners: []Owner{owner("eu1", eu, 1, 1, "w90 check"), owner("us1", us, 1, 0, "w10")}, rnd: low, want: "us1", rule: RuleWeighted},
		{behaviour: "local first: the client's own cluster alone, whatever its tier and weight",
			owners: []Owner{owner("eu1", eu, 1, 0, "w90"), owner("us1", us, 1, 0, "w10 p1")}, client: Client{Owner: "us1", Region: us},
			rnd: low, want: "us1", rule: RuleLocal},
		{behaviour: "local first skips an own cluster that is down: its region, then",
			owners: []Owner{owner("eu1", eu, 1, 1, "check"), owner("eu2", eu, 1, 0, ""), owner("us1", us, 1, 0, "")},
			client: Client{Owner: "eu1", Region: eu}, want: "eu2", rule: RuleUnion, region: true},
		{behaviour: "local first skips an own cluster at weight 0",
			owners: []Owner{owner("eu1", eu, 1, 0, "w0"), owner("us1", us, 1, 0, "w10")}, client: Client{Owner: "eu1", Region: eu},
			want: "us1", rule: RuleWeighted},
		{behaviour: "a client's region narrows the owners, then tiers and weights apply within it",
			owners: []Owner{owner("eu1", eu, 1, 0, "p1"), owner("eu2", eu, 1, 0, "p2"), owner("us1", us, 1, 0, "p0")},
			client: Client{Region: eu}, want: "eu1", rule: RuleUnion, region: true},
		{behaviour: "a region without an eligible owner: every eligible owner",
			owners: []Owner{owner("eu1", eu, 1, 1, "check"), owner("us1", us, 1, 0, ""), owner("ap1", "ap", 1, 0, "")},
			client: Client{Region: eu}, want: "us1,ap1", rule: RuleUnion},
		{behaviour: "a client whose cluster does not publish the name: its region",
			owners: []Owner{owner("eu1", eu, 1, 0, ""), owner("us1", us, 1, 0, "")}, client: Client{Owner: "eu9", Region: eu},
			want: "eu1", rule: RuleUnion, region: true},
		{behaviour: "fail open ignores locality",
			owners: []Owner{owner("eu1", eu, 1, 1, "check"), owner("us1", us, 1, 1, "check")}, client: Client{Owner: "eu1", Region: eu},
			want: "eu1,us1", rule: RuleFailOpen},
		{behaviour: "one owner: itself",
			owners: []Owner{owner("eu1", eu, 2, 0, "w5 p3 check")}, want: "eu1", rule: RuleWeighted},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			var buf [8]int
			res := Prepare(tc.owners).Choose(tc.client, tc.rnd, buf[:0])
			if got := ids(tc.owners, res.Owners); got != tc.want || res.Rule != tc.rule || res.Region != tc.region {
				t.Fatalf("answered %q by %s (region %v), want %q by %s (region %v)", got, res.Rule, res.Region, tc.want, tc.rule, tc.region)
			}
			if res.AllAddresses() != (tc.rule == RuleFailOpen) {
				t.Errorf("AllAddresses = %v", res.AllAddresses())
			}
			// Explain decides the same.
			eres, reports := Prepare(tc.owners).Explain(tc.client, tc.rnd)
			if got := ids(tc.owners, eres.Owners); got != tc.want || eres.Rule != tc.rule {
				t.Errorf("Explain answered %q by %s", got, eres.Rule)
			}
			for i, r := range reports {
				in := slices.Contains(res.Owners, i)
				if in != (r.Why == Answered) || in != strings.HasPrefix(r.Detail, "answered") {
					t.Errorf("report of %s (answered %v): %s", r.Owner, in, r)
				}
			}
		})
	}
}

// TestExplainSaysWhyEachOwnerIsLeftOut: one name, one reason per owner.
func TestExplainSaysWhyEachOwnerIsLeftOut(t *testing.T) {
	owners := []Owner{
		owner("down", "eu", 2, 2, "w50 check"),
		owner("drained", "eu", 1, 0, "w0"),
		owner("elsewhere", "us", 1, 0, "w50"),
		owner("standby", "eu", 1, 0, "w50 p1"),
		owner("drawn", "eu", 3, 1, "w60 check"),
		owner("lost", "eu", 1, 0, "w40"),
	}
	_, reports := Prepare(owners).Explain(Client{Owner: "nowhere", Region: "eu"}, low)
	want := []string{
		"owner down (region eu): weight 50, priority 0, health down (tcp://:443): left out: every address fails its health check",
		"owner drained (region eu): weight 0, priority 0, health not checked: left out: weight 0, answered only when no other owner is eligible",
		"owner elsewhere (region us): weight 50, priority 0, health not checked: left out: owners of the client's region eu answer",
		"owner standby (region eu): weight 50, priority 1, health not checked: left out: priority 1, tier 0 answers",
		"owner drawn (region eu): weight 60, priority 0, health 2 of 3 up (tcp://:443): answered: drawn, weight 60 of 100 in tier 0, in the client's region eu (1 address(es) left out, failing the health check)",
		"owner lost (region eu): weight 40, priority 0, health not checked: left out: not drawn this time, weight 40 of 100 in tier 0",
	}
	for i, r := range reports {
		if r.String() != want[i] {
			t.Errorf("report %d:\n got %s\nwant %s", i, r, want[i])
		}
	}
	_, reports = Prepare([]Owner{owner("eu1", "", 1, 1, "check"), owner("us1", "", 1, 0, "")}).Explain(Client{Owner: "us1"}, low)
	if !strings.Contains(reports[1].String(), "answered: the client's own cluster") {
		t.Errorf("local: %s", reports[1])
	}
	_, reports = Prepare([]Owner{owner("eu1", "", 1, 1, "check")}).Explain(Client{}, low)
	if !strings.Contains(reports[0].String(), "failing open") {
		t.Errorf("fail open: %s", reports[0])
	}
}

// TestWeightsHoldOverManyQuestions: 10,000 questions at weights 90/10 (and 50/30/20) answer
// each owner within 3 points of its share.
func TestWeightsHoldOverManyQuestions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		weights []int
	}{{[]int{90, 10}}, {[]int{50, 30, 20}}, {[]int{1, 1}}, {[]int{999, 1}}} {
		var owners []Owner
		total := 0
		for i, w := range tc.weights {
			owners = append(owners, Owner{ID: string(rune('a' + i)), Addrs: 1, Steering: record.Steering{Weight: w, Weighted: true}})
			total += w
		}
		const questions = 10000
		counts := make([]int, len(owners))
		var buf [4]int
		name := Prepare(owners)
		for range questions {
			res := name.Choose(Client{}, rng.Uint64(), buf[:0])
			counts[res.Owners[0]]++
		}
		for i, w := range tc.weights {
			got, want := 100*float64(counts[i])/questions, 100*float64(w)/float64(total)
			if math.Abs(got-want) > 3 {
				t.Errorf("weights %v: owner %d answered %.1f%%, want %.1f%% within 3 points", tc.weights, i, got, want)
			}
		}
		t.Logf("weights %v: answers %v of %d", tc.weights, counts, questions)
	}
}

func TestTransfer(t *testing.T) {
	for _, tc := range []struct {
		behaviour string
		owners    []Owner
		want      string
		rule      Rule
	}{
		{"no policy: every owner", []Owner{owner("eu1", "", 1, 0, ""), owner("us1", "", 1, 0, "")}, "eu1,us1", RuleUnion},
		{"weights do not split a secondary's zone: the whole tier",
			[]Owner{owner("eu1", "", 1, 0, "w90"), owner("us1", "", 1, 0, "w10"), owner("ap1", "", 1, 0, "w10 p1")}, "eu1,us1", RuleUnion},
		{"the lowest tier with an eligible owner",
			[]Owner{owner("eu1", "", 1, 1, "check"), owner("us1", "", 1, 0, "p1"), owner("ap1", "", 1, 0, "p2")}, "us1", RuleUnion},
		{"weight 0 stays out while another owner is eligible",
			[]Owner{owner("eu1", "", 1, 0, "w0"), owner("us1", "", 1, 0, "w5 p1")}, "us1", RuleUnion},
		{"none eligible: every owner",
			[]Owner{owner("eu1", "", 1, 1, "check"), owner("us1", "", 1, 1, "check p1")}, "eu1,us1", RuleFailOpen},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			res := Prepare(tc.owners).Transfer(nil)
			if got := ids(tc.owners, res.Owners); got != tc.want || res.Rule != tc.rule {
				t.Fatalf("transfer holds %q by %s, want %q by %s", got, res.Rule, tc.want, tc.rule)
			}
		})
	}
}

func TestHasPolicy(t *testing.T) {
	if HasPolicy([]Owner{owner("a", "", 1, 0, ""), owner("b", "", 1, 0, "")}) {
		t.Error("owners without policy have one")
	}
	for _, p := range []string{"w0", "p1", "check"} {
		if !HasPolicy([]Owner{owner("a", "", 1, 0, ""), owner("b", "", 1, 0, p)}) {
			t.Errorf("%q is no policy", p)
		}
	}
}

// TestChooseAllocatesNothing: with room in dst, a question costs no allocation.
func TestChooseAllocatesNothing(t *testing.T) {
	name := Prepare([]Owner{owner("eu1", "eu", 2, 1, "w90 check"), owner("us1", "us", 2, 0, "w10"), owner("ap1", "ap", 1, 0, "p1")})
	var buf [8]int
	var r uint64
	for _, c := range []Client{{}, {Owner: "us1", Region: "us"}, {Region: "eu"}, {Owner: "xx", Region: "yy"}} {
		if n := testing.AllocsPerRun(1000, func() {
			r += 0x9e3779b97f4a7c15
			_ = name.Choose(c, r, buf[:0])
			_ = name.Transfer(buf[:0])
		}); n != 0 {
			t.Errorf("client %+v: %v allocations per question", c, n)
		}
	}
}

// TestPreparedAnswersAsEveryStep: the answer a Name prepared for clients that locality does
// not place is the one the steps give, for any owners, health and draw; and more than 64
// owners work as a few.
func TestPreparedAnswersAsEveryStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	regions := []string{"", "eu", "us"}
	for round := range 2000 {
		n := 1 + rng.IntN(6)
		if round%100 == 0 {
			n = 65 + rng.IntN(70)
		}
		owners := make([]Owner, n)
		for i := range owners {
			addrs := 1 + rng.IntN(3)
			o := Owner{ID: string(rune('a'+i%26)) + strconv.Itoa(i), Region: regions[rng.IntN(3)], Addrs: addrs}
			if rng.IntN(2) == 0 {
				o.Steering.Weight, o.Steering.Weighted = rng.IntN(4)*10, true
			}
			o.Steering.Priority = rng.IntN(3)
			if rng.IntN(3) == 0 {
				o.Steering.HealthCheck, o.Down = "tcp://:443", rng.IntN(addrs+1)
			}
			owners[i] = o
		}
		name := Prepare(owners)
		for _, c := range []Client{{}, {Owner: "nobody", Region: "ap"}, {Owner: owners[0].ID}, {Region: "eu"}} {
			r := rng.Uint64()
			got := name.Choose(c, r, nil)
			want := decide(owners, c, r, nil, nil)
			if !slices.Equal(got.Owners, want.Owners) || got.Rule != want.Rule || got.Tier != want.Tier || got.Region != want.Region {
				t.Fatalf("owners %+v, client %+v: prepared %+v, the steps %+v", owners, c, got, want)
			}
		}
	}
}

func TestGroupGathersRecordsByOwner(t *testing.T) {
	var g Group
	w90 := record.Steering{Weight: 90, Weighted: true, HealthCheck: "tcp://:443"}
	for _, r := range []struct {
		owner string
		s     record.Steering
		down  bool
	}{
		{"eu1", w90, false}, {"us1", record.Steering{}, false}, {"eu1", w90, true},
		{"eu1", record.Steering{Weight: 5, Weighted: true}, false}, // by hand, otherwise: the first holds
		{"", record.Steering{}, false},
	} {
		g.Add(r.owner, r.s, r.down)
	}
	loc, err := locality(t, "locality-region eu eu1")
	if err != nil {
		t.Fatal(err)
	}
	owners := g.Owners(loc)
	want := []Owner{{ID: "eu1", Region: "eu", Steering: w90, Addrs: 3, Down: 1}, {ID: "us1", Addrs: 1}, {ID: "", Addrs: 1}}
	if !slices.Equal(owners, want) {
		t.Fatalf("owners %+v\nwant   %+v", owners, want)
	}
	if !Steered(owners, nil) || Steered(owners[1:], nil) {
		t.Error("Steered: a policy steers, none does not")
	}
	placing, _ := locality(t, "locality-cluster us1 10.3.0.0/16")
	if !Steered(owners[1:], placing) || Steered(owners[1:2], placing) {
		t.Error("Steered: locality steers a name of several owners, not one of one")
	}
}
