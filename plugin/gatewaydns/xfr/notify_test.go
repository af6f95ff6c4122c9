package xfr

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/zonefixture"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// transferStanzas are the transfer plugin's stanzas of Corefile lines, as the plugin's setup
// reads them back from the server block.
func transferStanzas(t *testing.T, lines string) []TransferStanza {
	t.Helper()
	c := caddy.NewTestController("dns", lines)
	stanzas, err := ParseTransfer(&c.Dispenser, c.ServerBlockKeys)
	if err != nil {
		t.Fatal(err)
	}
	return stanzas
}

// notifyListener is a secondary that answers NOTIFYs and notes when each came.
type notifyListener struct {
	addr    string
	mu      sync.Mutex
	refused int // NOTIFYs refused or dropped so far
	at      []time.Time
	zones   []string // the zones of every NOTIFY taken, in order
	soas    []string // the SOA each NOTIFY of zone.test carried ("" none), in order
}

func listenForNotifies(t *testing.T) *notifyListener {
	return listenForNotifiesWith(t, nil, 0, 0)
}

// listenForNotifiesWith is listenForNotifies, requiring NOTIFYs signed with one of secrets
// when given (others are refused), refusing the first refuse NOTIFYs and leaving the first drop
// unanswered.
func listenForNotifiesWith(t *testing.T, secrets map[string]string, refuse, drop int) *notifyListener {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &notifyListener{addr: pc.LocalAddr().String()}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, TsigSecret: secrets, NotifyStartedFunc: func() { close(started) }, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		signed := r.IsTsig() != nil && w.TsigStatus() == nil
		l.mu.Lock() // NOTIFYs are handled side by side
		defer l.mu.Unlock()
		switch {
		case drop > 0:
			drop--
			l.refused++
			return
		case secrets != nil && !signed:
			m.Rcode = dns.RcodeNotAuth
		case refuse > 0:
			refuse--
			l.refused++
			m.Rcode = dns.RcodeRefused
		case r.Opcode == dns.OpcodeNotify:
			l.zones = append(l.zones, r.Question[0].Name)
			if r.Question[0].Name == "zone.test." {
				l.at = append(l.at, time.Now())
				soa := ""
				if len(r.Answer) == 1 {
					soa = r.Answer[0].String()
				}
				l.soas = append(l.soas, soa)
			}
		}
		if signed {
			t := r.IsTsig()
			m.SetTsig(t.Hdr.Name, t.Algorithm, 300, time.Now().Unix())
		}
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

// waitUnanswered waits up to limit for the listener to have refused or dropped n NOTIFYs.
func (l *notifyListener) waitUnanswered(t *testing.T, n int, limit time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		unanswered := l.refused
		l.mu.Unlock()
		if unanswered >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d NOTIFYs refused or dropped within %s, want %d", unanswered, limit, n)
		}
	}
}

// notifyingZones loads a stanza of zones (zonefixture.Records) whose transfer plugin names the
// secondaries to, NOTIFYs signed with keyName when not "", and runs its notifier until the
// test ends.
func notifyingZones(t *testing.T, zones, keyName, key string, to ...string) (*served, *notifier) {
	t.Helper()
	cfg := Config{Transfer: transferStanzas(t, "transfer "+zones+" {\n to "+strings.Join(to, " ")+"\n}")}
	var fqdns []string
	for _, z := range strings.Fields(zones) {
		fqdns = append(fqdns, dns.Fqdn(z))
	}
	g := loaded(t, stanza{zones: fqdns, cfg: cfg}, zonefixture.Records)
	n := startNotifier(g.Transfers, keyName, key)
	t.Cleanup(n.stop)
	return g, n
}

// notifying runs a notifier for a loaded zone.test stanza whose transfer plugin sends to the
// addresses to; change makes a change to the zone.
func notifying(t *testing.T, to ...string) (n *notifier, change func()) {
	return notifyingSigned(t, "", "", to...)
}

// notifyingSigned is notifying with NOTIFYs signed with the key keyName, when not "".
func notifyingSigned(t *testing.T, keyName, key string, to ...string) (n *notifier, change func()) {
	t.Helper()
	g, n := notifyingZones(t, "zone.test", keyName, key, to...)
	rev := int64(100)
	return n, func() {
		rev++
		g.ix.Apply([]record.Change{{KV: zonefixture.At(rev, "/skydns/test/zone/burst/1", fmt.Sprintf(`{"host":"10.9.%d.%d"}`, rev/256%256, rev%256))}})
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
	time.Sleep(notifyMinGap + time.Second + notifySpread + 2*notifyPoll)
	for _, l := range []*notifyListener{one, two} {
		if got := len(l.times()); got != 2 {
			t.Errorf("%d NOTIFYs for a load and one burst of 20 changes, want 2", got)
		}
	}
}

// TestASustainedBurstIsNotifiedOnTheTurnOfEachSecond: changes that never pause for
// notifyQuiet still get a NOTIFY, one a second, at least notifyMinGap after the one before; the
// first secondary within a few polls of the turn of a second, the second of two half of
// notifySpread later. On a busy machine the burst may pause for longer now and then, which
// ends it: a NOTIFY off its offset must follow such a pause.
func TestASustainedBurstIsNotifiedOnTheTurnOfEachSecond(t *testing.T) {
	one, two := listenForNotifies(t), listenForNotifies(t)
	_, change := notifying(t, one.addr, two.addr)
	one.waitNotifies(t, 1, 2*time.Second)
	two.waitNotifies(t, 1, 2*time.Second)

	const burst = 3500 * time.Millisecond
	var changes []time.Time
	start := time.Now()
	for time.Since(start) < burst {
		change()
		changes = append(changes, time.Now())
		time.Sleep(time.Millisecond)
	}
	burstNotifiedAt(t, "the first secondary", one.times(), changes, 0)
	burstNotifiedAt(t, "the second secondary", two.times(), changes, notifySpread/2)
}

// burstNotifiedAt checks the NOTIFYs one secondary had during a burst of changes: each at
// offset past the turn of a second (within a few polls), or after a pause of the burst.
func burstNotifiedAt(t *testing.T, who string, notified, changes []time.Time, offset time.Duration) {
	t.Helper()
	late := 3 * notifyPoll // the poll that sees it due, on a busy machine
	var offsets []time.Duration
	for i := 1; i < len(notified); i++ {
		prev, at := notified[i-1], notified[i]
		if at.After(changes[len(changes)-1]) {
			break // the burst's end, quiet
		}
		past := at.Sub(at.Truncate(time.Second))
		offsets = append(offsets, past.Round(time.Millisecond))
		if past >= offset && past < offset+late && at.Sub(prev) >= notifyMinGap-notifyPoll {
			continue
		}
		if pause := longestPause(changes, prev.Add(-notifyPoll-offset), at); pause < notifyQuiet*3/4 {
			t.Errorf("%s: a NOTIFY %s past the turn of a second (want %s) and %s after the one before, with the zone never quiet in between (longest pause %s)",
				who, past, offset, at.Sub(prev), pause)
		}
	}
	t.Logf("%s: %d changes; NOTIFYs %v past the turn of a second", who, len(changes), offsets)
	if len(offsets) < 3 {
		t.Errorf("%s: %d NOTIFYs during the burst, want one a second", who, len(offsets))
	}
}

// The wait of a burst that does not pause: the next turn of a second, and notifyMinGap after
// the NOTIFY before.
func TestABurstThatDoesNotPauseIsDueOnTheTurnOfASecond(t *testing.T) {
	sec := time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return sec.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name        string
		first, prev time.Time
		want        time.Time
	}{
		{"no NOTIFY before: the next turn", ms(300), time.Time{}, ms(1000)},
		{"begun on the turn: that turn", ms(0), time.Time{}, ms(0)},
		{"the previous long before: the next turn", ms(300), ms(-5000), ms(1000)},
		{"a steady churn: one a second", ms(1040), ms(1010), ms(2000)},
		{"the previous late in the second: a turn later", ms(800), ms(760), ms(2000)},
		{"the previous early in the second: the next turn", ms(350), ms(300), ms(1000)},
		{"the gap ends on a turn: that turn", ms(800), ms(750), ms(1000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := churnNotifyDue(tc.first, tc.prev); !got.Equal(tc.want) {
				t.Errorf("churnNotifyDue(%s, %s) = %s, want %s", tc.first.Format("15:04:05.000"), tc.prev.Format("15:04:05.000"),
					got.Format("15:04:05.000"), tc.want.Format("15:04:05.000"))
			}
		})
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

// TestANotifyIsSentAgainUntilTheSecondaryAnswersIt: a secondary that refuses the first tries
// (down, or still loading) gets the NOTIFY again, with back-off, past the tries that count it
// as failed, until it takes it.
func TestANotifyIsSentAgainUntilTheSecondaryAnswersIt(t *testing.T) {
	l := listenForNotifiesWith(t, nil, notifyTries, 0)
	start := time.Now()
	notifying(t, l.addr)
	at := l.waitNotifies(t, 1, 5*time.Second)
	// The tries: at once, then after 0.25, 0.5 and 1 s; the third counts it failed, the
	// fourth is taken.
	if took := at[0].Sub(start); took < notifyRetryMin*(1+2+4) {
		t.Errorf("answered %s after the start, before the back-off of %d tries", took, notifyTries)
	}
}

// TestANewerSerialGoesOutAtOnceWhileAnOlderNotifyIsUnanswered: a secondary that refused the
// loaded zone's NOTIFY (starting, as NSD refuses a zone it has not loaded yet), or dropped it
// (Knot while it loads), hears of the next change when it happens, with its serial: not when
// the older NOTIFY's back-off or its wait for an answer (notifyTry) ends.
func TestANewerSerialGoesOutAtOnceWhileAnOlderNotifyIsUnanswered(t *testing.T) {
	for _, tc := range []struct {
		name          string
		refuse, drop  int
		olderWaitsFor time.Duration
	}{
		{"refused twice: its next try is a back-off away", 2, 0, notifyRetryMin * 2},
		{"dropped: its try waits for an answer", 0, 1, notifyTry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := listenForNotifiesWith(t, nil, tc.refuse, tc.drop)
			g, _ := notifyingZones(t, "zone.test", "", "", l.addr)
			l.waitUnanswered(t, tc.refuse+tc.drop, 2*time.Second)
			changed := time.Now()
			g.ix.Apply([]record.Change{{KV: zonefixture.At(300, "/skydns/test/zone/burst/1", `{"host":"10.9.0.3"}`)}})
			at := l.waitNotifies(t, 1, 3*time.Second)
			if took := at[0].Sub(changed); took >= tc.olderWaitsFor {
				t.Errorf("the change was NOTIFYed %s after it, want before the older NOTIFY's %s ended", took, tc.olderWaitsFor)
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			if want := g.st.Apex.SOAAt("zone.test.", 300, g.st.NegativeTTL).String(); l.soas[0] != want {
				t.Errorf("the NOTIFY carried %q, want the new serial's SOA %q", l.soas[0], want)
			}
		})
	}
}

// TestNotifiesAreSignedForASecondaryThatRequiresTSIG: with a key, each NOTIFY is signed, and a
// secondary requiring it takes the first one.
func TestNotifiesAreSignedForASecondaryThatRequiresTSIG(t *testing.T) {
	secrets := map[string]string{"xfr.key.": "c2VjcmV0LXNlY3JldC1zZWNyZXQ="}
	l := listenForNotifiesWith(t, secrets, 0, 0)
	_, change := notifyingSigned(t, "xfr.key.", secrets["xfr.key."], l.addr)
	l.waitNotifies(t, 1, 2*time.Second)
	change()
	changed := time.Now()
	at := l.waitNotifies(t, 2, 2*time.Second)
	if took := at[1].Sub(changed); took > time.Second {
		t.Errorf("the signed NOTIFY of a change came %s after it, want within 1s", took)
	}
}

// TestAChangeOutsideAZoneNeitherMovesItsSerialNorNotifiesIt: a stanza serving zone.test and
// its child eu1.zone.test (one watch, the parent's prefix) gives each zone its own serial: a
// change in the parent outside the child moves the parent's serial alone, and NOTIFYs the
// parent alone; a change in the child moves both (the parent holds the child's names too).
func TestAChangeOutsideAZoneNeitherMovesItsSerialNorNotifiesIt(t *testing.T) {
	l := listenForNotifies(t)
	g, _ := notifyingZones(t, "zone.test eu1.zone.test", "", "", l.addr)
	serials := func() string {
		b := g.ix
		return fmt.Sprint(b.Serial(request.Request{Zone: "zone.test."}), " ", b.Serial(request.Request{Zone: "eu1.zone.test."}))
	}
	l.waitNotifies(t, 1, 2*time.Second)
	waitZones := func(want int) []string {
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			l.mu.Lock()
			zones := slices.Clone(l.zones)
			l.mu.Unlock()
			if len(zones) >= want {
				return zones
			}
		}
		t.Fatalf("fewer than %d NOTIFYs within 2s", want)
		return nil
	}
	if got := serials(); got != "16 16" {
		t.Errorf("serials after the load: %s, want 16 16 (the last change, in eu1)", got)
	}
	before := len(waitZones(2)) // one per zone at the load
	g.ix.Apply([]record.Change{{KV: zonefixture.At(100, "/skydns/test/zone/outside/1", `{"host":"10.9.0.1"}`)}})
	if got := serials(); got != "100 16" {
		t.Errorf("serials after a change outside eu1: %s, want 100 16", got)
	}
	l.waitNotifies(t, 2, 2*time.Second)
	g.ix.Apply([]record.Change{{KV: zonefixture.At(101, "/skydns/test/zone/eu1/inside/1", `{"host":"10.9.0.2"}`)}})
	if got := serials(); got != "101 101" {
		t.Errorf("serials after a change inside eu1: %s, want 101 101", got)
	}
	zones := waitZones(before + 3)
	if got := fmt.Sprint(zones[before:]); got != "[zone.test. zone.test. eu1.zone.test.]" && got != "[zone.test. eu1.zone.test. zone.test.]" {
		t.Errorf("NOTIFYs after a change outside eu1, then one inside: %s, want zone.test. alone, then both", got)
	}
}

// A NOTIFY carries the zone's SOA at the serial it announces (RFC 1996 3.7), as BIND's do: a
// secondary in the middle of a transfer can tell that it asks for more (NSD was seen to stay
// on the old serial without it).
func TestANotifyCarriesTheSOAItAnnounces(t *testing.T) {
	l := listenForNotifies(t)
	g, _ := notifyingZones(t, "zone.test", "", "", l.addr)
	soa := func() string {
		return g.st.Apex.SOAAt("zone.test.", uint32(g.ix.Revision("zone.test.")), g.st.NegativeTTL).String()
	}
	l.waitNotifies(t, 1, 2*time.Second)
	first := soa()
	g.ix.Apply([]record.Change{{KV: zonefixture.At(200, "/skydns/test/zone/burst/1", `{"host":"10.9.0.1"}`)}})
	l.waitNotifies(t, 2, 2*time.Second)
	l.mu.Lock()
	soas := slices.Clone(l.soas)
	l.mu.Unlock()
	if want := []string{first, soa()}; !slices.Equal(soas[:2], want) || want[0] == want[1] {
		t.Errorf("the NOTIFYs carried\n%q\nwant the SOA of each serial\n%q", soas, want)
	}
}
