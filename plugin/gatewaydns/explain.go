package gatewaydns

import (
	"context"
	"strconv"
	"time"

	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
)

// explain answers a TXT question in the CHAOS class, when the stanza enables it, with one TXT
// record per record an A or TXT question for the name reads: its key, data, owner, the objects
// behind it, the etcd revision that last changed it and when this server learned it. This is
// `dig CH TXT name` for "where does this answer come from?".
func explain(ctx context.Context, b *backend, a *answer.Apex, zone string, state request.Request) (int, error) {
	origins, err := b.Explain(ctx, state)
	if err != nil {
		rcode := dns.RcodeServerFailure
		if b.IsNameError(err) {
			rcode, err = dns.RcodeNameError, nil
		}
		return answer.BackendError(b, a, zone, rcode, state, err)
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
		owner := o.Owner
		if owner == "" {
			owner = "(none)"
		}
		txt = append(txt, "owner="+owner)
		for _, s := range o.Sources {
			txt = append(txt, "source="+s)
		}
		txt = append(txt, "revision="+strconv.FormatInt(o.Revision, 10), "seen="+o.Seen.UTC().Format(time.RFC3339))
		if o.LeftOut != "" {
			txt = append(txt, "left-out="+o.LeftOut)
		}
		for i := range txt {
			if len(txt[i]) > 255 { // one character-string holds at most 255 bytes
				txt[i] = txt[i][:252] + "..."
			}
		}
		m.Answer = append(m.Answer, &dns.TXT{Hdr: dns.RR_Header{Name: state.QName(), Rrtype: dns.TypeTXT, Class: dns.ClassCHAOS}, Txt: txt})
	}
	state.SizeAndDo(m)
	m = state.Scrub(m)
	if err := state.W.WriteMsg(m); err != nil {
		return dns.RcodeServerFailure, err
	}
	return dns.RcodeSuccess, nil
}
