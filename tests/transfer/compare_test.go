package transfer

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/e2e"
)

// A question that a secondary of the zone is asked beside the primary.
type question struct {
	name  string
	qtype uint16
}

// xfrQuestions are the types a secondary must answer as the primary does.
var xfrQuestions = []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeSRV, dns.TypeTXT, dns.TypeMX, dns.TypeNS}

// cnameAnswersAlike are the types for which a name whose record is a host name (a CNAME) is
// answered alike by the primary and a secondary, if the target has records of that type: both
// answer the CNAME and the target's records (CoreDNS's plugin.A, AAAA and TXT follow an
// in-zone target as a zone does). A CNAME question is answered alike whatever the target has.
var cnameAnswersAlike = []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT}

// corpus is a zone's names as the tests ask a secondary about them.
type corpus struct {
	names  []string            // every name to compare, for every type of xfrQuestions
	cnames map[string]string   // names whose record is a host name -> that host
	holds  map[string][]uint16 // names that CNAMEs point to -> the types they have records of
}

// alikeQuestions are the questions a secondary answers as the primary does (README, "What a
// transfer holds"): every type for every name but a CNAME's, for which the CNAME question,
// and A, AAAA and TXT where the target has such records.
func (c corpus) alikeQuestions() []question {
	var qs []question
	for _, name := range c.names {
		target, isCNAME := c.cnames[name]
		for _, qtype := range xfrQuestions {
			if !isCNAME || qtype == dns.TypeCNAME || slices.Contains(cnameAnswersAlike, qtype) && slices.Contains(c.holds[target], qtype) {
				qs = append(qs, question{name, qtype})
			}
		}
	}
	return qs
}

// compareAnswers asks both servers each question over netw, 8 at a time, and fails on the first
// few differences of rcode, answer, or (for a negative answer) authority.
func compareAnswers(t *testing.T, netw, primary, secondary string, qs []question) {
	t.Helper()
	work := make(chan question)
	var mu sync.Mutex
	var diffs []string
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for q := range work {
				p, s := e2e.Ask(t, netw, primary, q.name, q.qtype), e2e.Ask(t, netw, secondary, q.name, q.qtype)
				if got, want := comparable(s), comparable(p); got != want {
					mu.Lock()
					diffs = append(diffs, fmt.Sprintf("%s %s over %s:\nsecondary %s\nprimary   %s", q.name, dns.TypeToString[q.qtype], netw, got, want))
					mu.Unlock()
				}
			}
		})
	}
	for _, q := range qs {
		work <- q
	}
	close(work)
	wg.Wait()
	reportDiffs(t, diffs)
}

func reportDiffs(t *testing.T, diffs []string) {
	t.Helper()
	for i, d := range diffs {
		if i == 10 {
			t.Errorf("... and %d more differences", len(diffs)-10)
			break
		}
		t.Error(d)
	}
}

// checkCNAMEDifferences pins what a secondary answers instead for a CNAME's other questions
// (README, "What a transfer holds"): the CNAME, and the target's own answer to the question,
// where the primary answers an SRV question with SRV records of the name itself (its host as
// target) and the others (MX, NS, and A, AAAA, TXT the target has none of) with NODATA.
func checkCNAMEDifferences(t *testing.T, primary, secondary string, c corpus) (asked int) {
	t.Helper()
	var diffs []string
	for _, name := range c.names {
		target, isCNAME := c.cnames[name]
		if !isCNAME {
			continue
		}
		for _, qtype := range xfrQuestions {
			if qtype == dns.TypeCNAME || slices.Contains(cnameAnswersAlike, qtype) && slices.Contains(c.holds[target], qtype) {
				continue
			}
			asked++
			p, s := e2e.Ask(t, "udp", primary, name, qtype), e2e.Ask(t, "udp", secondary, name, qtype)
			chased := e2e.Ask(t, "udp", secondary, target, qtype)
			cname := fmt.Sprintf("%s\t60\tIN\tCNAME\t%s", name, target)
			var wrong []string
			if got := e2e.Section(s.Answer); s.Rcode != dns.RcodeSuccess || !slices.Equal(got, e2e.Section(append([]dns.RR{mustRR(t, cname)}, chased.Answer...))) {
				wrong = append(wrong, fmt.Sprintf("secondary %s %v, want the CNAME and %v", dns.RcodeToString[s.Rcode], got, e2e.Section(chased.Answer)))
			}
			if p.Rcode != dns.RcodeSuccess || !primaryInstead(p, name, qtype) {
				wrong = append(wrong, fmt.Sprintf("primary %s %v, want %s", dns.RcodeToString[p.Rcode], e2e.Section(p.Answer), map[bool]string{true: "SRV records of the name", false: "NODATA"}[qtype == dns.TypeSRV]))
			}
			if len(wrong) > 0 {
				diffs = append(diffs, fmt.Sprintf("%s %s: %s", name, dns.TypeToString[qtype], strings.Join(wrong, "; ")))
			}
		}
	}
	if asked == 0 {
		t.Error("no CNAME question differs: the corpus holds no CNAME")
	}
	reportDiffs(t, diffs)
	return asked
}

// primaryInstead tells whether the primary's answer to a CNAME's question that a secondary
// answers otherwise is what the README says: SRV records of the name, or NODATA.
func primaryInstead(p *dns.Msg, name string, qtype uint16) bool {
	if qtype != dns.TypeSRV {
		return len(p.Answer) == 0
	}
	for _, rr := range p.Answer {
		if rr.Header().Rrtype != dns.TypeSRV || rr.Header().Name != name {
			return false
		}
	}
	return len(p.Answer) > 0
}

func mustRR(t *testing.T, s string) dns.RR {
	t.Helper()
	rr, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return rr
}

// comparable is a reply's rcode and answer, and its authority when the answer is empty (the
// file plugin puts the zone's NS beside a positive answer, gatewaydns does not), with the
// serial of an SOA there: a secondary that is current has the primary's.
func comparable(r *dns.Msg) string {
	ns, serials := []string{}, []uint32{}
	if len(r.Answer) == 0 {
		ns = e2e.Section(r.Ns)
		for _, rr := range r.Ns {
			if soa, ok := rr.(*dns.SOA); ok {
				serials = append(serials, soa.Serial)
			}
		}
	}
	return fmt.Sprintf("%s answer %v ns %v serial %v", dns.RcodeToString[r.Rcode], e2e.Section(r.Answer), ns, serials)
}
