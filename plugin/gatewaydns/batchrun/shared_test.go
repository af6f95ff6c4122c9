package batchrun

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/udpbatch"
)

// txtServing answers every plain question with one TXT record, text.
func txtServing(text string) udpbatch.Serving {
	return udpbatch.Serving{Answer: func(q *udpbatch.Question, dst []byte) ([]byte, bool) {
		m := new(dns.Msg)
		m.SetQuestion(string(q.Name), q.Query.Qtype)
		m.Response, m.Id = true, q.Query.ID
		m.Answer = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: string(q.Name), Rrtype: dns.TypeTXT, Class: dns.ClassINET}, Txt: []string{text}}}
		b, _ := m.Pack()
		return append(dst, b...), true
	}}
}

// TestAReloadHandsThePathOverWithoutLosingAQuestion plays a reload's order on one path: the
// new run reserves it at its startup, the old run lets go before the new server announced
// itself (the path waits, holding what it read), the new run serves (what waited is answered
// by it), a failed reload's run serves and lets go (the path answers as before), and the last
// run's letting go stops the path and frees the address.
func TestAReloadHandsThePathOverWithoutLosingAQuestion(t *testing.T) {
	ln, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.LocalAddr().(*net.UDPAddr)
	ln.Close()
	cfg := &dnsserver.Config{Transport: "dns", ListenHosts: []string{"127.0.0.1"}, Port: strconv.Itoa(addr.Port)}
	key := pathKey(serverAddrs(cfg)[0], 1, nil)
	start := func(s udpbatch.Serving) func() (*udpbatch.Path, error) {
		return func() (*udpbatch.Path, error) {
			return udpbatch.Start(udpbatch.Config{Addrs: []string{addr.String()}, Readers: 1, Serving: s, Log: log})
		}
	}
	serve := func(r *Run, text string) {
		t.Helper()
		if err := r.serveOn(key, txtServing(text), start(txtServing(text))); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(timeout time.Duration) (string, error) {
		c := &dns.Client{Net: "udp", Timeout: timeout}
		m := new(dns.Msg)
		m.SetQuestion("app.zone.test.", dns.TypeTXT)
		r, _, err := c.Exchange(m, addr.String())
		if err != nil {
			return "", err
		}
		return r.Answer[0].(*dns.TXT).Txt[0], nil
	}
	want := func(text string) {
		t.Helper()
		if got, err := ask(2 * time.Second); err != nil || got != text {
			t.Fatalf("answered %q (%v), want %q", got, err, text)
		}
	}

	old, next := &Run{readers: 1}, &Run{readers: 1}
	old.reserve([]*dnsserver.Config{cfg})
	serve(old, "old")
	want("old")
	next.reserve([]*dnsserver.Config{cfg})
	want("old") // the new instance has not served yet: the old one answers
	if err := old.letGo(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan string)
	go func() { got, _ := ask(5 * time.Second); waited <- got }()
	select {
	case got := <-waited:
		t.Fatalf("answered %q while no run served", got)
	case <-time.After(200 * time.Millisecond):
	}
	serve(next, "new")
	if got := <-waited; got != "new" {
		t.Fatalf("the question that waited was answered %q, want %q", got, "new")
	}
	failed := &Run{readers: 1}
	failed.reserve([]*dnsserver.Config{cfg})
	serve(failed, "failed")
	want("failed")
	if err := failed.letGo(); err != nil {
		t.Fatal(err)
	}
	want("new")
	if err := next.letGo(); err != nil {
		t.Fatal(err)
	}
	again, err := net.ListenPacket("udp", addr.String())
	if err != nil {
		t.Fatalf("the address is still held after the last run let go: %v", err)
	}
	again.Close()
}
