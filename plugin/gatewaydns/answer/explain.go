package answer

import (
	"context"
	"strconv"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/steer"
)

// Explained is what Explain reads: a backend's records, with where each came from, and how a
// steered name answers an asker.
type Explained interface {
	plugin.ServiceBackend
	Explain(ctx context.Context, state request.Request) ([]index.Origin, error)
	ExplainSteering(state request.Request, a index.Asker) (steer.Result, []steer.Report, bool)
}

// Explain answers a TXT question in the CHAOS class, when the stanza enables it, with one TXT
// record per record an A or TXT question for the name reads: its key, data, owner, the objects
// behind it, the etcd revision that last changed it and when this server learned it; and for a
// name answered from a choice among its owners, the rule and each owner's weight, tier, health
// and why it is in or out for the asker. This is `dig CH TXT name` for "where does this answer
// come from?".
func Explain(ctx context.Context, b Explained, a *Apex, zone string, state request.Request, asker index.Asker) (int, error) {
	origins, err := b.Explain(ctx, state)
	if err != nil {
		rcode := dns.RcodeServerFailure
		if b.IsNameError(err) {
			rcode, err = dns.RcodeNameError, nil
		}
		return BackendError(b, a, zone, rcode, state, err)
	}
	m := new(dns.Msg)
	m.SetReply(state.Req)
	m.Authoritative = true
	for _, o := range origins {
		txt := []string{"key=" + o.Key}
		if o.Host != "" {
			txt = append(txt, "host="+o.Host)
		}
		if o.Text != "" {
			txt = append(txt, "text="+o.Text)
		}
		txt = append(txt, "owner="+ownerOrNone(o.Owner))
		for _, s := range o.Sources {
			txt = append(txt, "source="+s)
		}
		txt = append(txt, "revision="+strconv.FormatInt(o.Revision, 10), "seen="+o.Seen.UTC().Format(time.RFC3339))
		if o.LeftOut != "" {
			txt = append(txt, "left-out="+o.LeftOut)
		}
		m.Answer = append(m.Answer, explainTXT(state, txt))
	}
	if res, reports, ok := b.ExplainSteering(state, asker); ok {
		for _, txt := range steeringTXT(res, reports) {
			m.Answer = append(m.Answer, explainTXT(state, txt))
		}
	}
	state.SizeAndDo(m)
	m = state.Scrub(m)
	if err := state.W.WriteMsg(m); err != nil {
		return dns.RcodeServerFailure, err
	}
	return dns.RcodeSuccess, nil
}

// explainTXT is one TXT record of explain's answer, each string cut to what one holds.
func explainTXT(state request.Request, txt []string) *dns.TXT {
	for i := range txt {
		if len(txt[i]) > 255 { // one character-string holds at most 255 bytes
			txt[i] = txt[i][:252] + "..."
		}
	}
	return &dns.TXT{Hdr: dns.RR_Header{Name: state.QName(), Rrtype: dns.TypeTXT, Class: dns.ClassCHAOS}, Txt: txt}
}

// steeringTXT says how a steered name answers the asker (shared/spec/steering.md): the rule
// that decided, then each owner's weight, tier, health and why it is in or out.
func steeringTXT(res steer.Result, reports []steer.Report) [][]string {
	summary := []string{"steering=" + res.Rule.String()}
	if res.Rule == steer.RuleFailOpen {
		summary = append(summary, "no owner is eligible: every owner's addresses are answered (fail open)")
	} else {
		summary = append(summary, "tier="+strconv.Itoa(res.Tier))
	}
	out := [][]string{summary}
	for _, r := range reports {
		weight := "none"
		if r.Weighted {
			weight = strconv.Itoa(r.Weight)
		}
		txt := []string{"owner=" + ownerOrNone(r.Owner), "weight=" + weight, "tier=" + strconv.Itoa(r.Priority), "health=" + r.Health()}
		if r.Check != "" {
			txt = append(txt, "check="+r.Check)
		}
		if r.Region != "" {
			txt = append(txt, "region="+r.Region)
		}
		out = append(out, append(txt, r.Detail))
	}
	return out
}

func ownerOrNone(owner string) string {
	if owner == "" {
		return "(none)"
	}
	return owner
}
