package catalog

import (
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestTheCatalogListsItsMembersAsRFC9432Has: the SOA first, NS invalid., version 2, and one PTR
// per member under zones, each member's label the same whatever the order or the process.
func TestTheCatalogListsItsMembersAsRFC9432Has(t *testing.T) {
	z := New("Catalog.Invalid", []string{"openmcp.cluster.", "Second.Test", "openmcp.cluster."})
	var got []string
	for _, rr := range z.Records() {
		got = append(got, strings.Join(strings.Fields(rr.String()), " "))
	}
	want := []string{
		"catalog.invalid. 0 IN SOA invalid. invalid. " + strings.Fields(z.SOA().String())[6] + " 3600 600 2147483646 0",
		"catalog.invalid. 0 IN NS invalid.",
		"version.catalog.invalid. 0 IN TXT \"2\"",
	}
	if len(got) != 5 {
		t.Fatalf("records %q, want 5", got)
	}
	if soa := z.SOA().(*dns.SOA); soa.Serial != z.Serial {
		t.Errorf("SOA %s, serial %d", got[0], z.Serial)
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("record %d: %s, want %s", i, got[i], w)
		}
	}
	for i, member := range []string{"openmcp.cluster.", "second.test."} {
		wantRR := memberID(member) + ".zones.catalog.invalid. 0 IN PTR " + member
		if got[3+i] != wantRR {
			t.Errorf("member %s: %s, want %s", member, got[3+i], wantRR)
		}
	}
	if again := New("catalog.invalid.", []string{"second.test.", "openmcp.cluster."}); again.Records()[3].String() != z.Records()[3].String() {
		t.Errorf("a member's label changed with the order of the members: %s, then %s", z.Records()[3], again.Records()[3])
	}
}

// TestACatalogMadeLaterHasANewerSerial, within the same second too: a reload that changes the
// members is taken by the secondaries.
func TestACatalogMadeLaterHasANewerSerial(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	a, b := nextSerial(now), nextSerial(now)
	c := nextSerial(now.Add(time.Hour))
	if !(int32(b-a) > 0 && int32(c-b) > 0) {
		t.Errorf("serials %d, %d, %d: want each after the one before", a, b, c)
	}
	if c != uint32(now.Add(time.Hour).Unix()) {
		t.Errorf("serial %d an hour later, want the time, %d", c, now.Add(time.Hour).Unix())
	}
}

// TestTheCatalogAnswersQuestionsAsAZone: its records, NODATA for a name without the type (or
// with names below it), NXDOMAIN for a name it does not have, both with the SOA.
func TestTheCatalogAnswersQuestionsAsAZone(t *testing.T) {
	z := New("catalog.invalid.", []string{"openmcp.cluster."})
	ptr := memberID("openmcp.cluster.") + ".zones.catalog.invalid."
	for _, tc := range []struct {
		name    string
		qtype   uint16
		rcode   int
		answers int
	}{
		{"catalog.invalid.", dns.TypeSOA, dns.RcodeSuccess, 1},
		{"CATALOG.invalid.", dns.TypeNS, dns.RcodeSuccess, 1},
		{"version.catalog.invalid.", dns.TypeTXT, dns.RcodeSuccess, 1},
		{ptr, dns.TypePTR, dns.RcodeSuccess, 1},
		{ptr, dns.TypeA, dns.RcodeSuccess, 0},
		{"zones.catalog.invalid.", dns.TypePTR, dns.RcodeSuccess, 0},
		{"other.catalog.invalid.", dns.TypeA, dns.RcodeNameError, 0},
	} {
		q := new(dns.Msg)
		q.SetQuestion(tc.name, tc.qtype)
		r := z.Reply(q)
		if r.Rcode != tc.rcode || len(r.Answer) != tc.answers || !r.Authoritative || tc.answers == 0 && len(r.Ns) != 1 {
			t.Errorf("%s %s: %s", tc.name, dns.TypeToString[tc.qtype], r)
		}
	}
}
