package gatewaydns

import (
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin/transfer"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// transferPlugin sets up the stock transfer plugin from Corefile lines, as CoreDNS does.
func transferPlugin(t *testing.T, lines string) *transfer.Transfer {
	t.Helper()
	c := caddy.NewTestController("dns", lines)
	setup, err := caddy.DirectiveAction("dns", "transfer")
	if err != nil {
		t.Fatal(err)
	}
	if err := setup(c); err != nil {
		t.Fatal(err)
	}
	return dnsserver.GetConfig(c).Plugin[0](nil).(*transfer.Transfer)
}

func TestNotifyTargetsAreWhatTheTransferPluginWouldNotify(t *testing.T) {
	tr := transferPlugin(t, `transfer zone.test other.test {
    to 127.0.0.1:5300 10.0.0.1 *
}
transfer sub.zone.test {
    to 10.0.0.2
    source 127.0.0.1
}
transfer any.test {
    to *
}`)
	got, ok := notifyTargets(tr, []string{"zone.test.", "sub.zone.test.", "deep.sub.zone.test.", "other.test.", "any.test.", "none.test."})
	if !ok {
		t.Fatal("the transfer plugin's stanzas could not be read: its fields changed")
	}
	want := map[string]notifyTarget{
		"zone.test.":          {to: []string{"127.0.0.1:5300", "10.0.0.1:53"}},
		"other.test.":         {to: []string{"127.0.0.1:5300", "10.0.0.1:53"}},
		"sub.zone.test.":      {to: []string{"10.0.0.2:53"}, source: net.ParseIP("127.0.0.1")},
		"deep.sub.zone.test.": {to: []string{"10.0.0.2:53"}, source: net.ParseIP("127.0.0.1")},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("targets\n got %v\nwant %v", got, want)
	}
	if targets, ok := notifyTargets(nil, []string{"zone.test."}); ok || targets != nil {
		t.Errorf("no transfer plugin: %v, %v", targets, ok)
	}
}

// notifyListener is a secondary that answers NOTIFYs and notes when each came.
type notifyListener struct {
	addr string
	mu   sync.Mutex
	at   []time.Time
}

func listenForNotifies(t *testing.T) *notifyListener {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &notifyListener{addr: pc.LocalAddr().String()}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, NotifyStartedFunc: func() { close(started) }, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		if r.Opcode == dns.OpcodeNotify && r.Question[0].Name == "zone.test." {
			l.mu.Lock()
			l.at = append(l.at, time.Now())
			l.mu.Unlock()
		}
		m := new(dns.Msg)
		m.SetReply(r)
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return l
}

func (l *notifyListener) times() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.at)
}

// waitNotifies waits up to limit for the listener to have had n NOTIFYs.
func (l *notifyListener) waitNotifies(t *testing.T, n int, limit time.Duration) []time.Time {
	t.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(5 * time.Millisecond) {
		if at := l.times(); len(at) >= n || time.Now().After(deadline) {
			if len(at) < n {
				t.Fatalf("%d NOTIFYs within %s, want %d", len(at), limit, n)
			}
			return at
		}
	}
}

// notifying runs a notifier for a loaded zone.test stanza whose transfer plugin sends to the
// addresses to; change makes a change to the zone.
func notifying(t *testing.T, to ...string) (n *notifier, change func()) {
	t.Helper()
	g := loadedStanza(t, "gatewaydns zone.test", transferFixture)
	lines := "transfer zone.test {\n to"
	for _, addr := range to {
		lines += " " + addr
	}
	n = startNotifier(g, transferPlugin(t, lines+"\n}"))
	t.Cleanup(n.stop)
	rev := int64(100)
	return n, func() {
		rev++
		g.stanza.index.Apply([]record.Change{{KV: at(rev, "/skydns/test/zone/burst/1", fmt.Sprintf(`{"host":"10.9.%d.%d"}`, rev/256%256, rev%256))}})
	}
}

func TestABurstOfChangesGivesOneNotifyPerSecondary(t *testing.T) {
	one, two := listenForNotifies(t), listenForNotifies(t)
	_, change := notifying(t, one.addr, two.addr)
	one.waitNotifies(t, 1, 2*time.Second) // once loaded
	two.waitNotifies(t, 1, 2*time.Second)

	for range 20 {
		change()
	}
	last := time.Now()
	for _, l := range []*notifyListener{one, two} {
		at := l.waitNotifies(t, 2, 2*time.Second)
		if took := at[1].Sub(last); took > time.Second {
			t.Errorf("NOTIFY %s after the burst, want within 1s", took)
		}
	}
	// No second NOTIFY for the same burst, in the longest a burst can wait.
	time.Sleep(notifyAtMost + 2*notifyPoll)
	for _, l := range []*notifyListener{one, two} {
		if got := len(l.times()); got != 2 {
			t.Errorf("%d NOTIFYs for a load and one burst of 20 changes, want 2", got)
		}
	}
}

// TestASustainedBurstIsNotifiedEveryHalfSecond: changes that never pause for notifyQuiet
// still get a NOTIFY within a second, one per notifyAtMost. On a busy machine the burst may
// pause for longer now and then, which ends it: a NOTIFY sooner than notifyAtMost after the
// previous one must follow such a pause.
func TestASustainedBurstIsNotifiedEveryHalfSecond(t *testing.T) {
	l := listenForNotifies(t)
	_, change := notifying(t, l.addr)
	l.waitNotifies(t, 1, 2*time.Second)

	const burst = 2 * time.Second
	var changes []time.Time
	start := time.Now()
	for time.Since(start) < burst {
		change()
		changes = append(changes, time.Now())
		time.Sleep(time.Millisecond)
	}
	notified := append([]time.Time{start}, l.times()[1:]...)
	var gaps []time.Duration
	for i := 1; i < len(notified); i++ {
		prev, at := notified[i-1], notified[i]
		gap := at.Sub(prev)
		gaps = append(gaps, gap.Round(time.Millisecond))
		if i > 1 && gap < notifyAtMost-notifyPoll {
			if pause := longestPause(changes, prev.Add(-notifyPoll), at); pause < notifyQuiet*3/4 {
				t.Errorf("NOTIFYs %s apart with the zone never quiet in between (longest pause %s): want one per %s", gap, pause, notifyAtMost)
			}
		}
	}
	t.Logf("%d changes in %s; NOTIFYs after %v", len(changes), burst, gaps)
	for i, gap := range gaps {
		if notified[i+1].After(changes[len(changes)-1]) {
			break
		}
		if gap > time.Second {
			t.Errorf("a NOTIFY %s after the previous one during a burst, want within 1s", gap)
		}
	}
	if len(gaps) < 3 {
		t.Errorf("%d NOTIFYs during a %s burst, want one every %s", len(gaps), burst, notifyAtMost)
	}
}

// longestPause is the longest time between two changes, of those within [from, to].
func longestPause(changes []time.Time, from, to time.Time) time.Duration {
	var longest time.Duration
	for i := 1; i < len(changes); i++ {
		if changes[i-1].Before(from) || changes[i].After(to) {
			continue
		}
		longest = max(longest, changes[i].Sub(changes[i-1]))
	}
	return longest
}

func TestADeadSecondaryDelaysNeitherTheOthersNorTheStop(t *testing.T) {
	// A black hole: a socket that never reads, so that a NOTIFY to it waits for its answer.
	dead, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	live := listenForNotifies(t)
	n, change := notifying(t, dead.LocalAddr().String(), live.addr)
	live.waitNotifies(t, 1, 2*time.Second)

	change()
	changed := time.Now()
	at := live.waitNotifies(t, 2, 3*time.Second)
	if took := at[1].Sub(changed); took > time.Second {
		t.Errorf("the live secondary got its NOTIFY %s after the change, want within 1s", took)
	}
	start := time.Now()
	n.stop()
	if took := time.Since(start); took > notifyTry/2 {
		t.Errorf("stop took %s with a NOTIFY to a dead secondary in flight", took)
	}
}
