package kubesource

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// TestDNSEndpointReadyFollowsItsNames pins Ready, as external-dns words it: Programmed once the
// names are published, Failed when the store refused one, Filtered when none is published for
// a reason of the filters, the policy or another owner, and left as it is while a name waits
// for the writer.
func TestDNSEndpointReadyFollowsItsNames(t *testing.T) {
	pub := func(n string) nameOutcome { return nameOutcome{name: n, is: outcomePublished} }
	for _, tc := range []struct {
		name     string
		outcomes []nameOutcome
		ok       bool
		status   metav1.ConditionStatus
		reason   string
		message  string
	}{
		{"every name published", []nameOutcome{pub("a.example"), pub("b.example")}, true,
			metav1.ConditionTrue, ReasonProgrammed, "2 name(s) published in etcd at revision 42"},
		{"some published, one withheld", []nameOutcome{pub("a.example"), {name: "b.example", is: outcomeFiltered, detail: "key held by owner c2"}}, true,
			metav1.ConditionTrue, ReasonProgrammed, "1 name(s) published in etcd at revision 42; not published: b.example: key held by owner c2"},
		{"one refused by the store", []nameOutcome{pub("a.example"), {name: "b.example", is: outcomeFailed, detail: "permission denied"}}, true,
			metav1.ConditionFalse, ReasonFailed, "Not published: b.example: permission denied"},
		{"none published", []nameOutcome{{name: "a.example", is: outcomeFiltered, detail: "lost to owner c2"}}, true,
			metav1.ConditionFalse, ReasonFiltered, "No endpoint published: a.example: lost to owner c2"},
		{"a name not reported yet", []nameOutcome{pub("a.example"), {name: "b.example"}}, false, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := readyOf(3, tc.outcomes, 42)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if c.Type != ConditionReady || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message || c.ObservedGeneration != 3 {
				t.Fatalf("got %+v, want Ready %s %s %q at generation 3", c, tc.status, tc.reason, tc.message)
			}
		})
	}
}

// TestDNSEndpointAcceptedNamesTheEntriesRefused: an entry that is not understood makes Accepted
// False (Invalid) with what is wrong; one outside the domain filter does not (it is Ready's
// Filtered), and a DNSEndpoint with no entry left to publish says why in Ready.
func TestDNSEndpointAcceptedNamesTheEntriesRefused(t *testing.T) {
	bad := source.Rejection{Hostname: "bad.example", Cause: source.CauseInvalidTarget, Reason: `spec.endpoints[1]: target "x" is not an IPv4 address`}
	out := source.Rejection{Hostname: "out.example", Cause: source.CauseDomainFilter, Reason: "name is outside the domain filter"}

	if c := acceptedOf(2, 3, nil); c.Status != metav1.ConditionTrue || c.Reason != ReasonAccepted || c.Message != "3 endpoint(s) accepted" {
		t.Errorf("all understood: %+v", c)
	}
	if c := acceptedOf(2, 3, []source.Rejection{out}); c.Status != metav1.ConditionTrue {
		t.Errorf("one outside the domain filter: %+v, want Accepted", c)
	}
	c := acceptedOf(2, 1, []source.Rejection{bad, out})
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonInvalid || c.Message != `bad.example: spec.endpoints[1]: target "x" is not an IPv4 address` {
		t.Errorf("one invalid: %+v", c)
	}
	if c := unpublishableOf(2, []source.Rejection{out}); c.Reason != ReasonFiltered || c.Status != metav1.ConditionFalse {
		t.Errorf("every entry outside the filter: %+v, want Filtered", c)
	}
	if c := unpublishableOf(2, []source.Rejection{bad, out}); c.Reason != ReasonInvalid || c.Status != metav1.ConditionFalse {
		t.Errorf("every entry refused: %+v, want Invalid", c)
	}
}

// TestDNSEndpointReadySpeaksForAGenerationOnceReported: Ready is written for a generation only
// once the writer has reported on the names it maps to, or when it maps to what the generation
// before did, which the writer reported on (nothing new to reconcile).
func TestDNSEndpointReadySpeaksForAGenerationOnceReported(t *testing.T) {
	sw := &statusWriter{}
	ref := pubRecs
	sw.mapped(ref, 1, false)
	if sw.reportedOn(ref, 1) {
		t.Fatal("generation 1 reported on before the writer reported")
	}
	sw.reported(ref)
	if !sw.reportedOn(ref, 1) {
		t.Fatal("generation 1 not reported on after the writer reported")
	}
	sw.mapped(ref, 2, true) // a spec change that changes no name's records
	if !sw.reportedOn(ref, 2) {
		t.Fatal("generation 2, which changes nothing the writer publishes, waits for a report")
	}
	sw.mapped(ref, 3, false) // a new target
	if sw.reportedOn(ref, 3) {
		t.Fatal("generation 3, a change to commit, reported on before the writer reported")
	}
	sw.mapped(ref, 4, true) // nothing more: still waiting for 3's report
	if sw.reportedOn(ref, 4) {
		t.Fatal("generation 4 reported on while generation 3's change was not")
	}
	sw.forget(ref)
	if sw.reportedOn(ref, 4) {
		t.Fatal("a DNSEndpoint deleted is still reported on")
	}
}
