package healthcheck

import (
	"bytes"
	"context"
	"fmt"
	golog "log"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gatewaydns/gatewaydns/internal/seriescheck"
	"go.uber.org/goleak"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// changes records what a Checker tells onChange.
type changes struct {
	mu  sync.Mutex
	all []Change
	at  []time.Time
}

func (c *changes) add(ch Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, ch)
	c.at = append(c.at, time.Now())
}

// waitTo waits until t has changed to state, and returns when it did.
func (c *changes) waitTo(tb testing.TB, t Target, to State, within time.Duration) time.Time {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		c.mu.Lock()
		for i, ch := range c.all {
			if ch.Target == t && ch.To == to {
				at := c.at[i]
				c.all, c.at = c.all[i+1:], c.at[i+1:]
				c.mu.Unlock()
				return at
			}
		}
		c.mu.Unlock()
		if time.Now().After(deadline) {
			tb.Fatalf("%s did not go %s within %s; changes: %v", t, to, within, c.list())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *changes) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, ch := range c.all {
		out = append(out, fmt.Sprintf("%s: %s->%s", ch.Target, ch.From, ch.To))
	}
	return out
}

func start(t *testing.T, cfg Config, server string) (*Checker, *changes) {
	t.Helper()
	ch := &changes{}
	c, err := New(cfg, server, ch.add)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c, ch
}

func check(t testing.TB, s string) record.HealthCheck {
	t.Helper()
	hc, err := record.ParseHealthCheck(s)
	if err != nil {
		t.Fatal(err)
	}
	return hc
}

// listen opens a loopback TCP listener on addr that accepts and closes every connection.
func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln
}

// blackHole is a loopback address whose connects time out: a listener with a backlog of 0
// that never accepts, its queue filled, so that the kernel drops every further SYN.
func blackHole(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
	for range 10 {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return addr
			}
			t.Fatalf("filling the backlog of %s: %v", addr, err)
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatalf("connects to %s never time out", addr)
	return ""
}

// TestTCPCheckFailsOverWithinTwoSeconds: with the defaults, a listener that closes is down
// within 2 s of closing, and up within 2 s of listening again, each told once.
func TestTCPCheckFailsOverWithinTwoSeconds(t *testing.T) {
	c, ch := start(t, Config{}, "tcp-test")
	ln := listen(t, "127.0.0.1:0")
	addr := ln.Addr().String()
	target := Target{Addr: "127.0.0.1", Check: check(t, "tcp://:"+addr[strings.LastIndexByte(addr, ':')+1:])}
	c.Set([]Target{target})
	ch.waitTo(t, target, Up, 2*time.Second)

	closed := time.Now()
	ln.Close()
	down := ch.waitTo(t, target, Down, 3*time.Second)
	if took := down.Sub(closed); took > 2*time.Second {
		t.Errorf("down %s after the listener closed, want within 2 s", took)
	} else {
		t.Logf("down %s after the listener closed", took)
	}
	if st, _ := c.Status(target); st.State != Down || !strings.Contains(st.Err, "refused") || st.Failed < 2 {
		t.Errorf("status %+v", st)
	}

	opened := time.Now()
	listen(t, addr)
	up := ch.waitTo(t, target, Up, 3*time.Second)
	if took := up.Sub(opened); took > 2*time.Second {
		t.Errorf("up %s after the listener opened again, want within 2 s", took)
	} else {
		t.Logf("up %s after the listener opened again", took)
	}
	if got := ch.list(); len(got) != 0 {
		t.Errorf("more changes than down and up: %v", got)
	}
}

// TestBlackHoledAddressGoesDownByTimeout: connects that are never answered fail by the
// timeout, and with the defaults a black-holed target is down within 2 s of being added.
func TestBlackHoledAddressGoesDownByTimeout(t *testing.T) {
	c, ch := start(t, Config{}, "blackhole-test")
	addr := blackHole(t)
	target := Target{Addr: "127.0.0.1", Check: check(t, "tcp://:"+addr[strings.LastIndexByte(addr, ':')+1:])}
	added := time.Now()
	c.Set([]Target{target})
	down := ch.waitTo(t, target, Down, 3*time.Second)
	if took := down.Sub(added); took > 2*time.Second {
		t.Errorf("down %s after it was added, want within 2 s", took)
	}
	st, _ := c.Status(target)
	if st.Took < DefaultTimeout-50*time.Millisecond || st.Took > DefaultTimeout+200*time.Millisecond || !strings.Contains(st.Err, "timeout") {
		t.Errorf("last check took %s, error %q: want the timeout %s", st.Took, st.Err, DefaultTimeout)
	}
}

// TestHTTPCheckFollowsTheStatus: an HTTP endpoint that answers 200, then 503, then 200 is up,
// down, up; the check sends the path, the Host of the check and asks to close the connection;
// a 3xx passes and is not followed.
func TestHTTPCheckFollowsTheStatus(t *testing.T) {
	var status atomic.Int32
	status.Store(200)
	var bad atomic.Value
	bad.Store("")
	var followed atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/elsewhere":
			followed.Add(1)
		case r.URL.Path != "/healthz" || r.URL.RawQuery != "deep=1" || r.Host != "app.example.com" || !r.Close:
			bad.Store(fmt.Sprintf("path %q query %q Host %q close %v", r.URL.Path, r.URL.RawQuery, r.Host, r.Close))
		}
		if s := int(status.Load()); s == http.StatusFound {
			http.Redirect(w, r, "/elsewhere", s)
		} else {
			w.WriteHeader(s)
		}
	}))
	defer srv.Close()
	c, ch := start(t, Config{Interval: 100 * time.Millisecond, Timeout: 80 * time.Millisecond}, "http-test")
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	target := Target{Addr: "127.0.0.1", Check: check(t, fmt.Sprintf("http://app.example.com:%d/healthz?deep=1", port))}
	c.Set([]Target{target})
	ch.waitTo(t, target, Up, time.Second)
	status.Store(503)
	ch.waitTo(t, target, Down, time.Second)
	if st, _ := c.Status(target); !strings.Contains(st.Err, "503") {
		t.Errorf("down with error %q, want the status", st.Err)
	}
	status.Store(http.StatusFound)
	ch.waitTo(t, target, Up, time.Second)
	if followed.Load() != 0 {
		t.Errorf("a redirect was followed %d times", followed.Load())
	}
	if b := bad.Load().(string); b != "" {
		t.Errorf("the check asked %s; want /healthz?deep=1 with Host app.example.com and Connection: close", b)
	}
}

// TestHTTPSCheckSendsTheServerNameAndTakesAnyCertificate: an https check of an address passes
// against a self-signed certificate and sends the check's host as the TLS server name.
func TestHTTPSCheckSendsTheServerNameAndTakesAnyCertificate(t *testing.T) {
	var sni atomic.Value
	sni.Store("")
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sni.Store(r.TLS.ServerName)
	}))
	defer srv.Close()
	c, ch := start(t, Config{Interval: 100 * time.Millisecond, Timeout: 80 * time.Millisecond}, "https-test")
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	named := Target{Addr: "127.0.0.1", Check: check(t, fmt.Sprintf("https://app.example.com:%d/", port))}
	plain := Target{Addr: "127.0.0.1", Check: check(t, fmt.Sprintf("https://:%d/ready", port))}
	c.Set([]Target{named})
	ch.waitTo(t, named, Up, time.Second)
	if got := sni.Load(); got != "app.example.com" {
		t.Errorf("server name %q, want app.example.com", got)
	}
	c.Set([]Target{plain})
	ch.waitTo(t, plain, Up, time.Second)
}

// fakeProbe answers checks from a table and counts them, and the most in flight at once.
type fakeProbe struct {
	mu       sync.Mutex
	fail     map[string]bool
	block    bool // hold every check until its context ends
	calls    map[string]int
	first    map[string]time.Time
	inFlight int
	maxIn    int
}

func (f *fakeProbe) probe(ctx context.Context, t Target) error {
	f.mu.Lock()
	f.calls[t.Addr]++
	if _, ok := f.first[t.Addr]; !ok {
		f.first[t.Addr] = time.Now()
	}
	f.inFlight++
	f.maxIn = max(f.maxIn, f.inFlight)
	fail, block := f.fail[t.Addr], f.block
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	if fail {
		return fmt.Errorf("fake failure")
	}
	return nil
}

func newFake() *fakeProbe {
	return &fakeProbe{fail: map[string]bool{}, calls: map[string]int{}, first: map[string]time.Time{}}
}

func (f *fakeProbe) called(addr string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[addr]
}

func tcpTarget(addr string) Target {
	return Target{Addr: addr, Check: record.HealthCheck{Scheme: record.CheckTCP, Port: 443}}
}

func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
	}
}

// TestSetDiffs: Set adds new targets Unknown, keeps the state of those it had, forgets those
// it no longer names (their checks stop), and moves Generation on each change of the set or of
// a state; the aggregate metrics count the targets by state.
func TestSetDiffs(t *testing.T) {
	f := newFake()
	f.fail["10.0.0.2"] = true
	ch := &changes{}
	c, err := newChecker(Config{Interval: 50 * time.Millisecond, Timeout: 20 * time.Millisecond}, "set-test", ch.add, f.probe)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	a, b := tcpTarget("10.0.0.1"), tcpTarget("10.0.0.2")
	g0 := c.Generation()
	c.Set([]Target{a, b, a})
	if c.Len() != 2 || c.Generation() == g0 {
		t.Fatalf("%d targets, generation %d after adding two (was %d)", c.Len(), c.Generation(), g0)
	}
	ch.waitTo(t, a, Up, time.Second)
	ch.waitTo(t, b, Down, time.Second)
	count := func(st State) float64 { return value(targetsByState.WithLabelValues("set-test", st.String())) }
	if count(Up) != 1 || count(Down) != 1 || count(Unknown) != 0 {
		t.Errorf("targets by state: up %v down %v unknown %v", count(Up), count(Down), count(Unknown))
	}

	g1 := c.Generation()
	c.Set([]Target{a})
	if _, ok := c.Status(b); ok || c.State(b) != Unknown || c.Generation() == g1 {
		t.Fatalf("b not forgotten, or generation unchanged")
	}
	if count(Down) != 0 {
		t.Errorf("a forgotten target still counted down")
	}
	n := f.called("10.0.0.2")
	time.Sleep(150 * time.Millisecond) // three intervals: b would have been checked again
	if got := f.called("10.0.0.2"); got > n+1 {
		t.Errorf("a forgotten target was checked %d more times", got-n)
	}
	g2 := c.Generation()
	c.Set([]Target{b, a})
	if c.State(a) != Up || c.State(b) != Unknown || c.Generation() == g2 {
		t.Errorf("after re-adding b: a %s, b %s", c.State(a), c.State(b))
	}
	g3 := c.Generation()
	c.Set([]Target{a, b})
	if c.Generation() != g3 {
		t.Errorf("the same set moved the generation")
	}
}

// TestConcurrencyIsBounded: checks that hang until their timeout never run more than
// Concurrency at once; rounds that find a target's check still running are skipped and counted.
func TestConcurrencyIsBounded(t *testing.T) {
	f := newFake()
	f.block = true
	c, err := newChecker(Config{Interval: 60 * time.Millisecond, Timeout: 60 * time.Millisecond, Concurrency: 3}, "bound-test", nil, f.probe)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	var ts []Target
	for i := range 20 {
		ts = append(ts, tcpTarget(fmt.Sprintf("10.0.1.%d", i)))
	}
	c.Set(ts)
	skipped := checksSkipped.WithLabelValues("bound-test")
	eventually(t, 3*time.Second, "skipped rounds", func() bool { return value(skipped) >= 10 })
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.maxIn > 3 {
		t.Fatalf("%d checks in flight at once, want at most 3", f.maxIn)
	}
}

// TestFirstChecksAreSpreadOverAnInterval: targets added at once are due for their first check
// at random moments within one interval, not all at once (the moments they are given, not when
// a loaded machine runs them), and each is checked.
func TestFirstChecksAreSpreadOverAnInterval(t *testing.T) {
	f := newFake()
	const interval = 500 * time.Millisecond
	c, err := newChecker(Config{Interval: interval, Timeout: 10 * time.Millisecond}, "jitter-test", nil, f.probe)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	var ts []Target
	for i := range 200 {
		ts = append(ts, tcpTarget(fmt.Sprintf("10.0.2.%d", i)))
	}
	added := time.Now()
	c.Set(ts)
	var bins [5]int // fifths of the interval
	c.mu.Lock()
	for _, tg := range c.targets {
		due := tg.due.Sub(added)
		if tg.running || tg.run.passed > 0 { // checked already: its next round is an interval on
			due -= interval
		}
		bins[min(max(int(due*5/interval), 0), 4)]++
	}
	c.mu.Unlock()
	for _, n := range bins {
		// 40 expected in each; fewer than 15 or more than 70 is a clump, not chance.
		if n < 15 || n > 70 {
			t.Errorf("first checks due by fifth of the interval: %v", bins)
			break
		}
	}
	eventually(t, 5*interval, "every target checked", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.first) == len(ts)
	})
}

// TestStopEndsEveryGoroutineAtOnce: Stop cancels checks in flight (black-holed connects) and
// returns when every goroutine of the Checker has ended, well before the timeout.
func TestStopEndsEveryGoroutineAtOnce(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	addr := blackHole(t)
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	c, err := New(Config{Interval: time.Second, Timeout: time.Second}, "stop-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ts []Target
	for i := range 50 {
		ts = append(ts, Target{Addr: "127.0.0.1", Check: check(t, fmt.Sprintf("http://h%d.example.com:%s/", i, port))})
	}
	c.Set(ts)
	time.Sleep(1100 * time.Millisecond) // every target has a check in flight
	stopped := time.Now()
	c.Stop()
	if took := time.Since(stopped); took > 200*time.Millisecond {
		t.Errorf("Stop took %s with checks in flight", took)
	}
	c.Stop() // again: nothing
	c.Set(ts)
	if c.Len() != 0 {
		t.Errorf("a stopped Checker took targets")
	}
}

// TestOnlyNamedNetworksGetSeriesOfTheirOwn: a target in a network of healthcheck-metrics has
// its own up and duration series, others have none; a forgotten target's series go.
func TestOnlyNamedNetworksGetSeriesOfTheirOwn(t *testing.T) {
	f := newFake()
	f.fail["10.9.0.2"] = true
	cfg := Config{Interval: 50 * time.Millisecond, Timeout: 20 * time.Millisecond, DownAfter: 1, MetricsFor: []netip.Prefix{netip.MustParsePrefix("10.9.0.0/30")}}
	ch := &changes{}
	c, err := newChecker(cfg, "series-test", ch.add, f.probe)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	watched, failing, other := tcpTarget("10.9.0.1"), tcpTarget("10.9.0.2"), tcpTarget("10.9.1.1")
	c.Set([]Target{watched, failing, other})
	ch.waitTo(t, failing, Down, time.Second)
	own := func() map[string]int { // per target: how many series of its own
		out := map[string]int{}
		for _, series := range seriescheck.Series(t, "target") {
			for _, labels := range series {
				if labels["server"] == "series-test" {
					out[labels["target"]]++
				}
			}
		}
		return out
	}
	eventually(t, time.Second, "series of the watched targets", func() bool {
		o := own()
		return o[watched.String()] == 2 && o[failing.String()] == 2
	})
	if o := own(); len(o) != 2 {
		t.Errorf("targets with series of their own: %v; want the two in the named network", o)
	}
	up := func(tg Target) float64 { return value(targetUp.WithLabelValues("series-test", tg.String())) }
	if up(watched) != 1 || up(failing) != 0 {
		t.Errorf("series: watched up %v, failing up %v", up(watched), up(failing))
	}
	c.Set([]Target{other})
	if o := own(); len(o) != 0 {
		t.Errorf("forgotten targets keep series: %v", o)
	}
}

// Forgetting a server block's series forgets every series of the health checker's metrics for
// it, and none of another block's.
func TestSeriesAreForgottenByServer(t *testing.T) {
	seriescheck.ForgottenByServer(t, "server", func(server string) {
		m := newMetrics(server)
		tg := &target{Target: tcpTarget("10.0.4.1"), name: "tcp://10.0.4.1:443", ownSeries: true}
		m.added(tg)
		m.checked(tg, true, time.Millisecond)
		m.own(tg, Up, time.Millisecond)
		m.changed(Unknown, Up)
		m.delay.Observe(0)
		m.skipped.Inc()
		m.inconclusive.Inc()
	}, ForgetSeries)
}

// TestOneLogLinePerChange: a target going down is logged once however many checks fail, and
// once when it comes up; a target that comes up from unknown is not news.
func TestOneLogLinePerChange(t *testing.T) {
	var buf syncBuffer
	golog.SetOutput(&buf)
	defer golog.SetOutput(os.Stderr)
	f := newFake()
	ch := &changes{}
	c, err := newChecker(Config{Interval: 20 * time.Millisecond, Timeout: 10 * time.Millisecond}, "log-test", ch.add, f.probe)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	tg := tcpTarget("10.0.3.1")
	c.Set([]Target{tg})
	ch.waitTo(t, tg, Up, time.Second)
	f.mu.Lock()
	f.fail["10.0.3.1"] = true
	f.mu.Unlock()
	ch.waitTo(t, tg, Down, time.Second)
	n := f.called("10.0.3.1")
	eventually(t, time.Second, "more failing checks", func() bool { return f.called("10.0.3.1") > n+5 })
	f.mu.Lock()
	f.fail["10.0.3.1"] = false
	f.mu.Unlock()
	ch.waitTo(t, tg, Up, time.Second)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "tcp://10.0.3.1:443: down after 2 checks failed in a row") || !strings.Contains(lines[1], "up again") {
		t.Fatalf("log:\n%s", buf.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// value is the value of a gauge or counter.
func value(m prometheus.Metric) float64 {
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		return math.NaN()
	}
	if d.Gauge != nil {
		return d.GetGauge().GetValue()
	}
	return d.GetCounter().GetValue()
}

func TestTargetOf(t *testing.T) {
	tg, ok := TargetOf("10.0.0.1", record.Steering{Weight: 5, Weighted: true, HealthCheck: "http://:8080/healthz"})
	if !ok || tg.String() != "http://10.0.0.1:8080/healthz" {
		t.Errorf("TargetOf = %v, %v", tg, ok)
	}
	if _, ok := TargetOf("10.0.0.1", record.Steering{Weight: 5, Weighted: true}); ok {
		t.Error("a target without a health check")
	}
	if tg, _ := TargetOf("2001:db8::1", record.Steering{HealthCheck: "tcp://:443"}); tg.String() != "tcp://[2001:db8::1]:443" {
		t.Errorf("IPv6 target %s", tg)
	}
}

// TestAStarvedCheckerFailsNoOneOver: a failure that ends well after the timeout (the checker
// was not run in time, as on an overloaded machine) counts neither way: the target stays up.
// One that ends at its timeout counts.
func TestAStarvedCheckerFailsNoOneOver(t *testing.T) {
	var late atomic.Bool
	late.Store(true)
	probe := func(ctx context.Context, _ Target) error {
		<-ctx.Done()
		if late.Load() {
			time.Sleep(30 * time.Millisecond) // the deadline passed long before we ran again
		}
		return ctx.Err()
	}
	ch := &changes{}
	c, err := newChecker(Config{Interval: 50 * time.Millisecond, Timeout: 20 * time.Millisecond}, "starved-test", ch.add, probe)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	tg := tcpTarget("10.0.5.1")
	c.Set([]Target{tg})
	inconclusive := checksInconclusive.WithLabelValues("starved-test")
	eventually(t, time.Second, "inconclusive checks", func() bool { return value(inconclusive) >= 4 })
	if st, _ := c.Status(tg); st.State != Unknown || !strings.Contains(st.Err, "inconclusive") {
		t.Fatalf("status %+v after late failures", st)
	}
	late.Store(false)
	ch.waitTo(t, tg, Down, time.Second)
}
