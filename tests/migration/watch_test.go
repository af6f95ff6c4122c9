package migration

// What the migration tests (migration_test.go) observe throughout a switch: every question
// asked continuously over UDP (questionPoller), and every put and delete under a prefix with
// its transaction's revision (keyWatch).

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/e2e"
)

// answerSet renders the answer section as sorted, deduplicated "A 1.2.3.4", "AAAA ...",
// "CNAME target." strings; dup tells whether a record came twice.
func answerSet(r *dns.Msg) []string {
	s, _ := answerSetDup(r)
	return s
}

func answerSetDup(r *dns.Msg) (set []string, dup bool) {
	seen := map[string]bool{}
	for _, rr := range r.Answer {
		var s string
		switch v := rr.(type) {
		case *dns.A:
			s = "A " + v.A.String()
		case *dns.AAAA:
			s = "AAAA " + v.AAAA.String()
		case *dns.CNAME:
			s = "CNAME " + v.Target
		default:
			s = dns.TypeToString[rr.Header().Rrtype] + " " + strings.TrimPrefix(rr.String(), rr.Header().String())
		}
		if seen[s] {
			dup = true
			continue
		}
		seen[s] = true
		set = append(set, s)
	}
	sort.Strings(set)
	return set, dup
}

// questionPoller asks every question in turn, continuously, over UDP, and keeps every reply
// that is not the wanted answer.
type questionPoller struct {
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}

	mu     sync.Mutex
	rounds int
	asked  map[string]int
	bad    []string
}

// pollQuestions starts the poller; it stops at finish, or when the test ends (a test that
// fails before finish leaves no goroutine asking).
func pollQuestions(t *testing.T, addr string, qs []migQuestion) *questionPoller {
	p := &questionPoller{stop: make(chan struct{}), done: make(chan struct{}), asked: map[string]int{}}
	go func() {
		defer close(p.done)
		for {
			for _, q := range qs {
				r, err := e2e.Exchange("udp", addr, q.name, q.qtype)
				now := time.Now().Format("15:04:05.000")
				p.mu.Lock()
				p.asked[q.String()]++
				switch {
				case err != nil:
					p.bad = append(p.bad, fmt.Sprintf("%s %s: no reply: %v", now, q, err))
				case r.Rcode != dns.RcodeSuccess:
					p.bad = append(p.bad, fmt.Sprintf("%s %s: %s", now, q, dns.RcodeToString[r.Rcode]))
				default:
					// A record twice in one answer is wrong too: the server answers IP hosts
					// de-duplicated (spec/records.md), whatever keys etcd holds.
					got, dup := answerSetDup(r)
					switch {
					case !slices.Equal(got, q.want):
						p.bad = append(p.bad, fmt.Sprintf("%s %s: NOERROR with %v, want %v", now, q, got, q.want))
					case dup:
						p.bad = append(p.bad, fmt.Sprintf("%s %s: NOERROR with a record twice: %v", now, q, r.Answer))
					}
				}
				p.mu.Unlock()
			}
			p.mu.Lock()
			p.rounds++
			p.mu.Unlock()
			select {
			case <-p.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(p.halt)
	return p
}

// halt stops the poller and waits until it has.
func (p *questionPoller) halt() {
	p.stopOnce.Do(func() { close(p.stop) })
	<-p.done
}

// waitRounds waits until the poller has asked every question n more times.
func (p *questionPoller) waitRounds(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	p.mu.Lock()
	target := p.rounds + n
	p.mu.Unlock()
	for deadline := time.Now().Add(timeout); ; time.Sleep(10 * time.Millisecond) {
		p.mu.Lock()
		r := p.rounds
		p.mu.Unlock()
		if r >= target {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the DNS poller did only %d of %d rounds within %s", r-(target-n), n, timeout)
		}
	}
}

// finish stops the poller and fails the test for every reply that was not the wanted answer.
func (p *questionPoller) finish(t *testing.T, what string) {
	t.Helper()
	p.halt()
	p.mu.Lock()
	defer p.mu.Unlock()
	total := 0
	for _, n := range p.asked {
		total += n
	}
	if p.rounds < 20 {
		t.Errorf("%s: only %d rounds of questions, too few to say anything", what, p.rounds)
	}
	if len(p.bad) > 0 {
		shown := p.bad
		if len(shown) > 20 {
			shown = shown[:20]
		}
		t.Errorf("%s: %d of %d replies were not the wanted answer:\n%s", what, len(p.bad), total, strings.Join(shown, "\n"))
	}
	t.Logf("%s: %d rounds, %d questions (%v), %d not answered as wanted", what, p.rounds, total, p.asked, len(p.bad))
}

// keyEvent is one put or delete seen by a keyWatch.
type keyEvent struct {
	put   bool
	key   string
	rev   int64  // the revision of the put or delete (the transaction's)
	value string // the value put, or the value deleted
}

func (e keyEvent) String() string {
	op := "DELETE"
	if e.put {
		op = "PUT"
	}
	return fmt.Sprintf("rev %d %s %s %s", e.rev, op, e.key, e.value)
}

// keyWatch records every change under a prefix from the revision it started at.
type keyWatch struct {
	cli    *clientv3.Client
	from   int64
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	events []keyEvent
	seen   int64 // the highest revision the watch is known to have delivered up to
	err    error
}

// watchKeys starts watching prefix from the next revision.
func watchKeys(t *testing.T, cli *clientv3.Client, prefix string) *keyWatch {
	t.Helper()
	gctx, gcancel := context.WithTimeout(context.Background(), e2e.EtcdCallTimeout)
	resp, err := cli.Get(gctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	gcancel()
	if err != nil {
		t.Fatalf("get %s: %v", prefix, err)
	}
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	w := &keyWatch{cli: cli, from: resp.Header.Revision + 1, cancel: cancel, done: make(chan struct{}), seen: resp.Header.Revision}
	ch := cli.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(w.from), clientv3.WithPrevKV())
	go func() {
		defer close(w.done)
		for resp := range ch {
			w.mu.Lock()
			if err := resp.Err(); err != nil && w.err == nil {
				w.err = err
			}
			for _, ev := range resp.Events {
				e := keyEvent{put: ev.Type == clientv3.EventTypePut, key: string(ev.Kv.Key), rev: ev.Kv.ModRevision}
				if e.put {
					e.value = string(ev.Kv.Value)
				} else if ev.PrevKv != nil {
					e.value = string(ev.PrevKv.Value)
				}
				w.events = append(w.events, e)
			}
			w.seen = max(w.seen, resp.Header.Revision)
			w.mu.Unlock()
		}
	}()
	t.Cleanup(w.close)
	return w
}

func (w *keyWatch) close() {
	w.cancel()
	<-w.done
}

// catchUp waits until the watch has delivered every change up to etcd's current revision, and
// returns the events so far.
func (w *keyWatch) catchUp(t *testing.T) []keyEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := w.cli.Get(ctx, "/", clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	now := resp.Header.Revision
	for {
		w.mu.Lock()
		seen, werr := w.seen, w.err
		events := slices.Clone(w.events)
		w.mu.Unlock()
		if werr != nil {
			t.Fatalf("watching %s: %v", migPrefix, werr)
		}
		if seen >= now {
			return events
		}
		// A progress notification carries the revision the watch is synced to.
		_ = w.cli.RequestProgress(clientv3.WithRequireLeader(ctx))
		select {
		case <-ctx.Done():
			t.Fatalf("the watch delivered up to revision %d, not %d, within 10s", seen, now)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// registryTypePrefixes start the first label of the name of an external-dns TXT registry
// record (new format, v0.12 on): "a-", "aaaa-", "cname-"... before the record's own first label.
var registryTypePrefixes = []string{"a-", "aaaa-", "cname-", "txt-", "ns-", "mx-", "ptr-", "srv-", "naptr-"}

// firstPut is the first put among the events after the first from, ok false when there is none
// yet.
func (w *keyWatch) firstPut(from int) (keyEvent, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.events[min(from, len(w.events)):] {
		if e.put {
			return e, true
		}
	}
	return keyEvent{}, false
}
