package udpbatch

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"go.uber.org/goleak"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/packed"
)

type testLog struct{ t *testing.T }

func (l testLog) Warningf(format string, v ...any) { l.t.Logf(format, v...) }

// freeUDP is a loopback address no socket holds now.
func freeUDP(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().String()
}

// TestAPathAnswersWhatItCanAndHandsOffTheRest: questions for "packed." names are answered by
// the path's Answer, with the question's ID and name; every other one, and what is not a plain
// question (EDNS options), goes to the handler, whose reply reaches the client through the
// path's socket. Stop leaves no goroutine and no socket: the address binds again without
// SO_REUSEPORT.
func TestAPathAnswersWhatItCanAndHandsOffTheRest(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	addr := freeUDP(t)
	var answered, handed atomic.Int64
	p, err := Start(Config{
		Addrs:   []string{addr},
		Readers: 2,
		Serving: Serving{Answer: func(q *Question, dst []byte) ([]byte, bool) {
			if !strings.HasPrefix(string(q.Name), "packed.") {
				return dst, false
			}
			answered.Add(1)
			m := new(dns.Msg)
			m.SetQuestion(string(q.Name), q.Query.Qtype)
			m.Response, m.Id = true, q.Query.ID
			m.Answer = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: string(q.Name), Rrtype: dns.TypeTXT, Class: dns.ClassINET}, Txt: []string{"packed"}}}
			b, _ := m.Pack()
			return append(dst, b...), true
		},
			Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
				handed.Add(1)
				m := new(dns.Msg)
				m.SetReply(r)
				m.Answer = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET}, Txt: []string{"handed off"}}}
				w.WriteMsg(m)
			})},
		Log: testLog{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	ask := func(name string, edns func(*dns.Msg)) string {
		t.Helper()
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeTXT)
		if edns != nil {
			edns(m)
		}
		r, _, err := c.Exchange(m, addr)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.Id != m.Id || len(r.Answer) != 1 {
			t.Fatalf("%s: reply %v", name, r)
		}
		return r.Answer[0].(*dns.TXT).Txt[0]
	}
	for i := range 50 {
		if got := ask(fmt.Sprintf("packed.n%d.test.", i), nil); got != "packed" {
			t.Fatalf("packed.n%d: %q", i, got)
		}
		if got := ask(fmt.Sprintf("other.n%d.test.", i), nil); got != "handed off" {
			t.Fatalf("other.n%d: %q", i, got)
		}
	}
	nsid := func(m *dns.Msg) {
		m.SetEdns0(1232, false)
		m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_NSID{Code: dns.EDNS0NSID})
	}
	if got := ask("packed.nsid.test.", nsid); got != "handed off" {
		t.Fatalf("a question with an EDNS option: %q, want it handed off", got)
	}
	if answered.Load() != 50 || handed.Load() != 51 {
		t.Fatalf("answered %d, handed off %d; want 50 and 51", answered.Load(), handed.Load())
	}
	// A reload hands the running path over: its next questions are the new Serving's.
	txt := func(text string) func(q *Question, dst []byte) ([]byte, bool) {
		return func(q *Question, dst []byte) ([]byte, bool) {
			m := new(dns.Msg)
			m.SetQuestion(string(q.Name), q.Query.Qtype)
			m.Response, m.Id = true, q.Query.ID
			m.Answer = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: string(q.Name), Rrtype: dns.TypeTXT, Class: dns.ClassINET}, Txt: []string{text}}}
			b, _ := m.Pack()
			return append(dst, b...), true
		}
	}
	p.Serve(Serving{Answer: txt("served after the hand-over"), Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Answer = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET}, Txt: []string{"handed off after the hand-over"}}}
		w.WriteMsg(m)
	})})
	if got := ask("packed.again.test.", nil); got != "served after the hand-over" {
		t.Fatalf("after Serve: %q", got)
	}
	if got := ask("packed.nsid.test.", nsid); got != "handed off after the hand-over" {
		t.Fatalf("after Serve, a question with an EDNS option: %q", got)
	}
	if err := p.Stop(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	again, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatalf("the address is still held after Stop: %v", err)
	}
	again.Close()
}

// TestParseQueryTakesPlainQuestionsOnly pins what the path answers itself.
func TestParseQueryTakesPlainQuestionsOnly(t *testing.T) {
	pack := func(f func(m *dns.Msg)) []byte {
		m := new(dns.Msg)
		m.SetQuestion("App.Example.ORG.", dns.TypeA)
		f(m)
		b, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		f    func(m *dns.Msg)
		ok   bool
	}{
		{"plain", func(m *dns.Msg) {}, true},
		{"EDNS", func(m *dns.Msg) { m.SetEdns0(1232, true) }, true},
		{"EDNS version 1", func(m *dns.Msg) { m.SetEdns0(1232, true); m.IsEdns0().SetVersion(1) }, false},
		{"EDNS option", func(m *dns.Msg) {
			m.SetEdns0(1232, true)
			m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "0123456789abcdef"})
		}, false},
		{"a response", func(m *dns.Msg) { m.Response = true }, false},
		{"NOTIFY", func(m *dns.Msg) { m.Opcode = dns.OpcodeNotify }, false},
		{"two questions", func(m *dns.Msg) { m.Question = append(m.Question, m.Question[0]) }, false},
		{"TSIG", func(m *dns.Msg) { m.SetTsig("key.", dns.HmacSHA256, 300, time.Now().Unix()) }, false},
		{"an answer", func(m *dns.Msg) {
			m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: "a.", Rrtype: dns.TypeA, Class: dns.ClassINET}, A: net.IPv4(1, 2, 3, 4)}}
		}, false},
		{"an escaped name", func(m *dns.Msg) { m.Question[0].Name = `a\.b.example.org.` }, false},
		{"the root", func(m *dns.Msg) { m.Question[0].Name = "." }, false},
	} {
		var q packed.Query
		name, ok := packed.ParseQuery(pack(tc.f), &q, nil)
		if ok != tc.ok {
			t.Errorf("%s: ok %t, want %t", tc.name, ok, tc.ok)
			continue
		}
		if ok && (string(name) != "app.example.org." || q.Qtype != dns.TypeA || q.Qclass != dns.ClassINET) {
			t.Errorf("%s: %q %d %d", tc.name, name, q.Qtype, q.Qclass)
		}
	}
}

// TestAnAddressAnotherProcessListensOnIsTaken: the path leaves an address alone where another
// process's socket is bound, and takes one where only this process's are.
func TestAnAddressAnotherProcessListensOnIsTaken(t *testing.T) {
	own, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if taken := Taken([]string{own.LocalAddr().String()}); len(taken) != 0 {
		t.Fatalf("this process's own socket counts as another's: %v", taken)
	}
	cmd := exec.Command("python3", "-c", "import socket,sys,time\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\ns.bind(('127.0.0.1',0))\nprint(s.getsockname()[1],flush=True)\ntime.sleep(30)")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("no python3 to hold a socket in another process: %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var port int
	if _, err := fmt.Fscan(out, &port); err != nil {
		t.Fatal(err)
	}
	other := fmt.Sprintf("127.0.0.1:%d", port)
	if taken := Taken([]string{other, own.LocalAddr().String()}); len(taken) != 1 || taken[0] != other {
		t.Fatalf("taken %v, want [%s]", taken, other)
	}
}
