package transfer

import (
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// withAncestors adds to names every name above them in the zone (the apex, the names with
// names below them, the empty non-terminals), and names that do not exist: one below each
// tenth name, and one beside them.
func withAncestors(names []string, zone string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	for i, name := range names {
		add(name)
		if i%10 == 0 {
			add("x." + name)
		}
		for n := name; n != zone; {
			_, parent, _ := strings.Cut(n, ".")
			add(parent)
			n = parent
		}
	}
	add("nothere." + zone)
	return out
}

// TestASecondaryOfAnExactNamesPrimaryAnswersEveryNameAlike runs corefile.d/primary.Corefile
// with exact-names and transfer-synthetic beside a secondary: the secondary answers every name as the primary does,
// also the names with names below them, the apex, and names that do not exist, for every type
// and SOA (the CNAMEs' other questions as the README says), and the primary answers NXDOMAIN and
// NODATA as a plain zone does.
func TestASecondaryOfAnExactNamesPrimaryAnswersEveryNameAlike(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	c := xfrCorpus(t, etcd.Client(t), 1000)
	const endpoint = "endpoint {$GATEWAYDNS_ETCD_ENDPOINTS}"
	primary, secondary := primaryWithSecondary(t, etcd.ClientURL, func(s string) string {
		if !strings.Contains(s, endpoint) {
			t.Fatalf("primary.Corefile has no %q line to add exact-names after", endpoint)
		}
		return strings.Replace(s, endpoint, endpoint+"\n        exact-names\n        transfer-synthetic", 1)
	})

	for _, tc := range []struct {
		name  string
		qtype uint16
		want  string
	}{
		{"app0.c0.openmcp.cluster.", dns.TypeA, "NOERROR answers"},
		{"3e6bee2e.app0.c0.openmcp.cluster.", dns.TypeA, "NOERROR answers"},
		{"app0.c0.openmcp.cluster.", dns.TypeTXT, "NODATA"},
		{"c0.openmcp.cluster.", dns.TypeA, "NODATA"},       // an empty non-terminal
		{"openmcp.cluster.", dns.TypeA, "NODATA"},          // the apex: its own records only
		{"api.c0.openmcp.cluster.", dns.TypeSRV, "NODATA"}, // not its subtree's SRV
		{"c0.openmcp.cluster.", dns.TypeSOA, "NODATA"},     // an SOA only at the apex
		{"openmcp.cluster.", dns.TypeSOA, "NOERROR answers"},
		{"nothere.openmcp.cluster.", dns.TypeA, "NXDOMAIN"},
		{"nothere.openmcp.cluster.", dns.TypeSOA, "NXDOMAIN"},
		{"x.3e6bee2e.app0.c0.openmcp.cluster.", dns.TypeA, "NXDOMAIN"}, // below a leaf
	} {
		r := e2e.Ask(t, "udp", primary.DNS, tc.name, tc.qtype)
		got := dns.RcodeToString[r.Rcode]
		switch {
		case r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0:
			got = "NOERROR answers"
		case r.Rcode == dns.RcodeSuccess:
			got = "NODATA"
		}
		if got != tc.want {
			t.Errorf("primary with exact-names, %s %s: %s, want %s (%v)", tc.name, dns.TypeToString[tc.qtype], got, tc.want, r)
		}
	}

	all := corpus{names: withAncestors(c.names, "openmcp.cluster."), cnames: c.cnames, holds: c.holds}
	qs := all.alikeQuestions()
	for _, name := range all.names {
		if _, isCNAME := all.cnames[name]; !isCNAME {
			qs = append(qs, question{name, dns.TypeSOA})
		}
	}
	start := time.Now()
	compareAnswers(t, "udp", primary.DNS, secondary.DNS, qs)
	differ := checkCNAMEDifferences(t, primary.DNS, secondary.DNS, all)
	t.Logf("compared %d questions about %d names (%d more than the corpus's), and %d questions answered otherwise about CNAMEs, in %s",
		len(qs), len(all.names), len(all.names)-len(c.names), differ, time.Since(start).Round(time.Millisecond))
}
