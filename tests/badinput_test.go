package tests

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// badValue is one hostile etcd entry: a key below /skydns/test/<zone>/ and its value.
type badValue struct {
	what    string
	key     func(label string) string // the key, given a label unique to this put
	value   string
	invalid bool // must be skipped and counted; false: documented as served (see comment)
}

func badValues() []badValue {
	under := func(rest string) func(string) string {
		return func(l string) string { return "/skydns/test/zone/" + l + rest }
	}
	return []badValue{
		{"1 MiB host", under("/1"), `{"host":"` + strings.Repeat("a", 1<<20) + `"}`, true},
		{"not JSON", under("/1"), `{host:`, true},
		{"JSON array", under("/1"), `[1,2,3]`, true},
		{"JSON string", under("/1"), `"10.0.0.1"`, true},
		{"null", under("/1"), `null`, true},
		{"host is a number", under("/1"), `{"host":1234}`, true},
		{"ttl is a string", under("/1"), `{"host":"10.0.0.1","ttl":"300"}`, true},
		{"host with a space", under("/1"), `{"host":"bad host.example"}`, true},
		{"host with a slash", under("/1"), `{"host":"a/b.example"}`, true},
		{"host with empty label", under("/1"), `{"host":"a..example"}`, true},
		{"host label of 64", under("/1"), `{"host":"` + strings.Repeat("h", 64) + `.example"}`, true},
		{"neither host nor text", under("/1"), `{"ttl":30}`, true},
		{"100 levels, too long a name", under(strings.Repeat("/level", 100) + "/1"), `{"host":"10.0.0.1"}`, true},
		{"empty key element", under("//x/1"), `{"host":"10.0.0.1"}`, true},
		{"label of 64 in key", under("/" + strings.Repeat("k", 64) + "/1"), `{"host":"10.0.0.1"}`, true},
		{"port out of 16 bits", under("/1"), `{"host":"10.0.0.1","port":70000}`, true},
		{"negative priority", under("/1"), `{"host":"10.0.0.1","priority":-1}`, true},
		// Served, documented: invalid UTF-8 in a JSON string decodes to U+FFFD, and a host of
		// such bytes is a valid (binary) DNS name, a CNAME target nothing resolves.
		{"non-UTF-8 host", under("/1"), "{\"host\":\"\xff\xfe\xfd\"}", false},
		// Accepted, documented: a non-UTF-8 key element decodes to a binary label, but no
		// question reaches it (a question for \255 looks up the text "\255"), as in the stock
		// plugin: a dead record, neither counted nor answered.
		{"non-UTF-8 key", under("/\xff/1"), `{"host":"10.0.0.1"}`, false},
		// Served, documented: a 1 MiB TXT is a valid SkyDNS value. It cannot fit in a DNS
		// message; the test checks that asking for it neither breaks the server nor SERVFAILs
		// other names.
		{"1 MiB text", under("/1"), `{"text":"` + strings.Repeat("t", 1<<20) + `"}`, false},
		// Served, documented: 100 one-letter levels make a 2xx-byte name, which is valid.
		{"100 levels, valid name", under(strings.Repeat("/d", 100) + "/1"), `{"host":"10.0.0.1"}`, false},
	}
}

// knownNames are put before the server starts; each must answer NOERROR with data throughout.
var knownNames = []struct {
	name  string
	qtype uint16
	key   string
	value string
}{
	{"web.zone.test.", dns.TypeA, "/skydns/test/zone/web/1", `{"host":"10.7.0.1"}`},
	{"v6.zone.test.", dns.TypeAAAA, "/skydns/test/zone/v6/1", `{"host":"2001:db8::7"}`},
	{"alias.zone.test.", dns.TypeA, "/skydns/test/zone/alias/1", `{"host":"web.zone.test"}`},
	{"note.zone.test.", dns.TypeTXT, "/skydns/test/zone/note/1", `{"text":"hello"}`},
	{"svc.zone.test.", dns.TypeSRV, "/skydns/test/zone/svc/1", `{"host":"10.7.0.2","port":8443}`},
}

func checkKnownNames(t *testing.T, addr, when string) int {
	t.Helper()
	n := 0
	for _, k := range knownNames {
		for _, netw := range []string{"udp", "tcp"} {
			r := e2e.Ask(t, netw, addr, k.name, k.qtype)
			if r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0 {
				t.Errorf("%s: %s %s over %s answered %s with %d answers, want NOERROR with data", when, k.name, dns.TypeToString[k.qtype], netw, dns.RcodeToString[r.Rcode], len(r.Answer))
			}
			n++
		}
	}
	return n
}

// TestBadInput puts hostile values into a real etcd, before the first load and while the
// server watches, and throws malformed packets at the server: bad values are skipped and
// counted, known names keep answering, malformed packets get FORMERR or nothing.
func TestBadInput(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	ctx := context.Background()
	put := func(k, v string) {
		t.Helper()
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatalf("put %.80s: %v", k, err)
		}
	}
	for _, k := range knownNames {
		put(k.key, k.value)
	}
	for i := range 100 { // "big": more A records than fit in 512 bytes
		put(fmt.Sprintf("/skydns/test/zone/big/%03d", i), fmt.Sprintf(`{"host":"10.8.%d.%d"}`, i/250, i%250+1))
	}
	put("/skydns/test/other/web/1", `{"host":"10.9.0.1"}`)
	bad := badValues()
	invalid := 0
	for i, b := range bad {
		put(b.key(fmt.Sprintf("load%02d", i)), b.value)
		if b.invalid {
			invalid++
		}
	}

	const zones = "zone.test."
	before := e2e.MetricSum(t, "coredns_gatewaydns_invalid_records_total", map[string]string{"zones": zones})
	port, anyPort := corednsproc.FreePort(t), corednsproc.FreePort(t)
	e2e.StartCoreDNS(t, fmt.Sprintf("zone.test:%d {\n    gatewaydns {\n        endpoint %s\n    }\n}\nother.test:%d {\n    any\n    gatewaydns {\n        endpoint %[2]s\n    }\n}\n", port, etcd.ClientURL, anyPort))
	addr, anyAddr := fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("127.0.0.1:%d", anyPort)
	e2e.WaitFor(t, 15*time.Second, addr, "web.zone.test.", dns.TypeA, e2e.HasAnswer)
	e2e.WaitFor(t, 15*time.Second, anyAddr, "web.other.test.", dns.TypeA, e2e.HasAnswer)

	waitCounter := func(want float64, when string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := e2e.MetricSum(t, "coredns_gatewaydns_invalid_records_total", map[string]string{"zones": zones}) - before
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: invalid_records_total rose by %v, want %v", when, got, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitCounter(float64(invalid), "first load")
	checked := checkKnownNames(t, addr, "after load of bad values")

	// The same values arriving through the watch.
	for i, b := range bad {
		put(b.key(fmt.Sprintf("watch%02d", i)), b.value)
	}
	put("/skydns/test/zone/sentinel/1", `{"host":"10.7.9.9"}`)
	e2e.WaitFor(t, 5*time.Second, addr, "sentinel.zone.test.", dns.TypeA, e2e.AnswersWith("10.7.9.9"))
	waitCounter(float64(2*invalid), "watch")
	checked += checkKnownNames(t, addr, "after watch of bad values")
	t.Logf("%d hostile values (%d invalid) at load and through the watch: invalid_records_total +%d", len(bad), invalid, 2*invalid)

	// The documented, served ones: each answers without breaking the server.
	labelOf := func(what string) string {
		for i, b := range bad {
			if b.what == what {
				return fmt.Sprintf("load%02d", i)
			}
		}
		t.Fatalf("no bad value %q", what)
		return ""
	}
	for _, netw := range []string{"udp", "tcp"} {
		r, err := e2e.Exchange(netw, addr, labelOf("1 MiB text")+".zone.test.", dns.TypeTXT)
		if err == nil && r.Rcode == dns.RcodeServerFailure {
			t.Errorf("1 MiB TXT over %s: SERVFAIL", netw)
		}
		if err != nil {
			t.Logf("1 MiB TXT over %s: no usable reply (%v): it cannot fit in a DNS message", netw, err)
		} else {
			t.Logf("1 MiB TXT over %s: rcode=%s tc=%v answers=%d", netw, dns.RcodeToString[r.Rcode], r.Truncated, len(r.Answer))
		}
	}
	deep := "1" + strings.Repeat(".d", 100) + "." + labelOf("100 levels, valid name") + ".zone.test."
	if r := e2e.Ask(t, "udp", addr, deep, dns.TypeA); !e2e.AnswersWith("10.0.0.1")(r) {
		t.Errorf("100-level valid name: %v", r)
	}
	r := e2e.Ask(t, "udp", addr, "\\255."+labelOf("non-UTF-8 key")+".zone.test.", dns.TypeA)
	if r.Rcode == dns.RcodeServerFailure {
		t.Errorf("non-UTF-8 key: SERVFAIL")
	}
	t.Logf("non-UTF-8 key, asked as \\255: rcode=%s answers=%d", dns.RcodeToString[r.Rcode], len(r.Answer))
	r = e2e.Ask(t, "udp", addr, labelOf("non-UTF-8 host")+".zone.test.", dns.TypeA)
	if r.Rcode == dns.RcodeServerFailure {
		t.Errorf("non-UTF-8 host: SERVFAIL")
	}
	t.Logf("non-UTF-8 host: rcode=%s answers=%v", dns.RcodeToString[r.Rcode], r.Answer)
	checked += checkKnownNames(t, addr, "after asking the hostile names")

	// Malformed packets.
	checked += malformedPackets(t, addr)
	checked += checkKnownNames(t, addr, "after malformed packets")

	// ANY (RFC 8482).
	r = e2e.Ask(t, "udp", addr, "web.zone.test.", dns.TypeANY)
	wire, _ := r.Pack()
	t.Logf("ANY without the any plugin: rcode=%s answers=%d authority=%d size=%dB", dns.RcodeToString[r.Rcode], len(r.Answer), len(r.Ns), len(wire))
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 || len(wire) > 512 {
		t.Errorf("ANY without the any plugin: want a small NOERROR/NODATA, got %dB %v", len(wire), r)
	}
	r = e2e.Ask(t, "udp", addr, "big.zone.test.", dns.TypeANY)
	if wire, _ := r.Pack(); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 || len(wire) > 512 {
		t.Errorf("ANY of a name with 100 records: want a small NOERROR/NODATA, got %dB %v", len(wire), r)
	}
	if r := e2e.Ask(t, "udp", addr, "nothere.zone.test.", dns.TypeANY); r.Rcode != dns.RcodeNameError {
		t.Errorf("ANY of an unknown name: want NXDOMAIN, got %v", r)
	}
	r = e2e.Ask(t, "udp", anyAddr, "web.other.test.", dns.TypeANY)
	if len(r.Answer) != 1 || r.Answer[0].Header().Rrtype != dns.TypeHINFO {
		t.Errorf("ANY with the any plugin: want one HINFO (RFC 8482), got %v", r)
	}

	// Size: UDP truncates, TCP carries all, EDNS0 carries more than plain UDP.
	plain := e2e.Ask(t, "udp", addr, "big.zone.test.", dns.TypeA)
	full := e2e.Ask(t, "tcp", addr, "big.zone.test.", dns.TypeA)
	m := new(dns.Msg)
	m.SetQuestion("big.zone.test.", dns.TypeA)
	m.SetEdns0(4096, false)
	edns, _, err := (&dns.Client{Net: "udp", Timeout: 3 * time.Second, UDPSize: 4096}).Exchange(m, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("100 A records: UDP %d answers tc=%v; EDNS0 4096 %d tc=%v; TCP %d tc=%v", len(plain.Answer), plain.Truncated, len(edns.Answer), edns.Truncated, len(full.Answer), full.Truncated)
	if !plain.Truncated || len(plain.Answer) >= 100 {
		t.Errorf("plain UDP: want TC and fewer than 100 answers, got tc=%v %d", plain.Truncated, len(plain.Answer))
	}
	if full.Truncated || len(full.Answer) != 100 {
		t.Errorf("TCP: want all 100 answers, got tc=%v %d", full.Truncated, len(full.Answer))
	}
	if len(edns.Answer) <= len(plain.Answer) || edns.Truncated {
		t.Errorf("EDNS0 4096: want more answers than plain UDP's %d and no TC, got %d tc=%v", len(plain.Answer), len(edns.Answer), edns.Truncated)
	}
	checked += checkKnownNames(t, addr, "at the end")
	t.Logf("known names answered NOERROR in %d checks", checked)
}

// malformedPackets sends random bytes, truncated headers and an over-long question name over
// raw UDP: each gets FORMERR (or NOTIMP for a non-query opcode) or no answer at all, and the
// server answers a good question after every batch. It returns the number of checks.
func malformedPackets(t *testing.T, addr string) int {
	t.Helper()
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rng := rand.New(rand.NewSource(8))
	var packets [][]byte
	for range 300 { // random bytes
		p := make([]byte, rng.Intn(600))
		rng.Read(p)
		packets = append(packets, p)
	}
	good := new(dns.Msg)
	good.SetQuestion("web.zone.test.", dns.TypeA)
	goodWire, _ := good.Pack()
	for n := range 12 { // truncated headers
		packets = append(packets, goodWire[:n])
	}
	for n := 12; n < len(goodWire); n++ { // header and a cut-off question
		packets = append(packets, goodWire[:n])
	}
	// A question whose name is 300 bytes: five 59-byte labels.
	long := make([]byte, 12)
	binary.BigEndian.PutUint16(long[0:], 0xbeef)
	binary.BigEndian.PutUint16(long[4:], 1) // QDCOUNT
	for range 5 {
		long = append(long, 59)
		long = append(long, strings.Repeat("x", 59)...)
	}
	long = append(long, 4, 'z', 'o', 'n', 'e', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1)
	packets = append(packets, long)

	counts := map[string]int{}
	buf := make([]byte, 65535)
	for i, p := range packets {
		var probe dns.Msg
		unpacked := probe.Unpack(p) == nil
		if unpacked && !probe.Response && len(probe.Question) == 1 && probe.Opcode == dns.OpcodeQuery {
			counts["skipped: a valid query"]++
			continue
		}
		// A header that claims a question the packet does not hold unpacks (miekg/dns lowers
		// QDCOUNT) to a query without a question, which CoreDNS's server itself answers with
		// SERVFAIL before any plugin runs (core/dnsserver/server.go). Upstream behaviour.
		noQuestion := unpacked && !probe.Response && probe.Opcode == dns.OpcodeQuery &&
			len(probe.Question) == 0 && len(p) >= 12 && binary.BigEndian.Uint16(p[4:]) == 1
		if _, err := conn.Write(p); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
		n, err := conn.Read(buf)
		if err != nil {
			counts["no answer"]++
		} else {
			var r dns.Msg
			if uerr := r.Unpack(buf[:n]); uerr != nil && n < 12 {
				t.Errorf("packet %d (%d bytes): unparseable %d-byte reply", i, len(p), n)
				continue
			}
			if noQuestion && r.Rcode == dns.RcodeServerFailure {
				counts["SERVFAIL (no question, CoreDNS core)"]++
				continue
			}
			counts[dns.RcodeToString[r.Rcode]]++
			if r.Rcode != dns.RcodeFormatError && r.Rcode != dns.RcodeNotImplemented {
				t.Errorf("packet %d (%d bytes %x...): rcode %s, want FORMERR or no answer", i, len(p), p[:min(len(p), 16)], dns.RcodeToString[r.Rcode])
			}
		}
		if i%50 == 0 || i == len(packets)-1 {
			if r := e2e.Ask(t, "udp", addr, "web.zone.test.", dns.TypeA); !e2e.HasAnswer(r) {
				t.Fatalf("after malformed packet %d the server does not answer: %v", i, r)
			}
		}
	}
	t.Logf("%d malformed packets: %v", len(packets), counts)
	return len(packets)
}
