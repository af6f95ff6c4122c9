package writer_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// wtRefusals is a wtObserver that also hears of refusals (writer.RefusalObserver).
type wtRefusals struct {
	*wtObserver
	mu      sync.Mutex
	refused map[string]int // transactions refused, by cause
	states  []string       // every Refusing call's cause, in order
}

func (o *wtRefusals) Refused(cause string, _ error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.refused == nil {
		o.refused = map[string]int{}
	}
	o.refused[cause]++
}

func (o *wtRefusals) Refusing(cause string, _ error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.states = append(o.states, cause)
}

func (o *wtRefusals) seen() (map[string]int, []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := map[string]int{}
	for k, v := range o.refused {
		r[k] = v
	}
	return r, append([]string(nil), o.states...)
}

// quota is the etcd quota of the test: 16 MiB, as the issue's.
const quota = 16 << 20

// TestAFullEtcdIsLoudAndItsEndIsSeenAtOnce: etcd reaches its 16 MiB quota (NOSPACE alarm)
// under a leader that then has a change to make. The refused transaction is counted under
// no-space, the refusal is told once when it begins, the name waits as a failure of its own
// (an Event on its objects in the publish role). After the runbook (compact, defragment, `alarm
// disarm`) the change lands within 1 s, and the end of the refusal is told once. Before, the
// writer said nothing, and its change landed 29.8 s after the disarm (its back-off).
func TestAFullEtcdIsLoudAndItsEndIsSeenAtOnce(t *testing.T) {
	e := testenv.StartEtcd(t, testenv.WithEtcdArgs("--quota-backend-bytes=16777216"))
	cli := e.Client(t)
	a, b := wtName("a"), wtName("b")
	d := wtWant(wtEP(a, "10.0.0.1"))
	obs := &wtRefusals{wtObserver: &wtObserver{}}
	w, _ := wtStart(t, cli, writer.Config{Owner: "c1", Desired: d, Observer: obs})
	wtEventually(t, 10*time.Second, "published", wtHostsAre(t, cli, a, "c1=10.0.0.1"))

	testenv.FillEtcd(t, cli, quota)
	d.set(wtEP(b, "10.0.0.2"))
	w.Enqueue(b)
	asked := time.Now()
	wtEventually(t, 5*time.Second, "the refusal counted, told and on the name", func() bool {
		refused, states := obs.seen()
		err := obs.failedName(b)
		return refused[writer.CauseNoSpace] > 0 && len(states) == 1 && states[0] == writer.CauseNoSpace &&
			err != nil && strings.Contains(err.Error(), "database space exceeded")
	})
	t.Logf("refusal counted, told and reported on %s %v after the change; the name's failure: %v", b, time.Since(asked).Round(time.Millisecond), obs.failedName(b))
	if got := obs.get(func(o *wtObserver) bool { return o.problems[1] == 1 }); !got {
		t.Errorf("failing names %v, want 1 (the change that waits)", obs.problems)
	}

	disarmed := testenv.FreeEtcd(t, cli, e.ClientURL)
	wtEventually(t, 5*time.Second, "the change landed after the disarm", wtHostsAre(t, cli, b, "c1=10.0.0.2"))
	if took := time.Since(disarmed); took > time.Second {
		t.Errorf("the change landed %v after the disarm, want within 1s", took.Round(time.Millisecond))
	} else {
		t.Logf("the change landed %v after the disarm", took.Round(time.Millisecond))
	}
	wtEventually(t, 5*time.Second, "the refusal's end told, the name settled", func() bool {
		_, states := obs.seen()
		return len(states) == 2 && states[1] == "" && obs.get(func(o *wtObserver) bool { return o.problems[1] == 0 })
	})
	refused, states := obs.seen()
	t.Logf("refused transactions by cause %v; refusal states told %q", refused, states)
}

// TestARefusedStandbyTellsTheRefusalsEndWhenItStandsBy: a replica that starts while etcd is
// full has its campaign refused (its session's lease is a write). After the runbook its
// campaign goes through and it stands by behind the leader, writing nothing more: the end of
// the refusal is told then, within a second of the disarm, not when (if ever) it leads. Before,
// its writer_refused gauge stayed 1, and GatewayDNSWriterRefused firing, for as long as it
// stood by.
func TestARefusedStandbyTellsTheRefusalsEndWhenItStandsBy(t *testing.T) {
	e := testenv.StartEtcd(t, testenv.WithEtcdArgs("--quota-backend-bytes=16777216"))
	cli := e.Client(t)
	d := wtWant(wtEP(wtName("a"), "10.0.0.1"))
	leader, _ := wtStart(t, cli, writer.Config{Owner: "c1", Desired: d, Identity: "leader"})
	wtEventually(t, 10*time.Second, "a leader", leader.IsLeader)

	testenv.FillEtcd(t, cli, quota)
	obs := &wtRefusals{wtObserver: &wtObserver{}}
	standby, _ := wtStart(t, cli, writer.Config{Owner: "c1", Desired: d, Observer: obs, Identity: "standby"})
	wtEventually(t, 5*time.Second, "the standby's campaign refused", func() bool {
		refused, states := obs.seen()
		return refused[writer.CauseNoSpace] > 0 && slices.Equal(states, []string{writer.CauseNoSpace})
	})

	disarmed := testenv.FreeEtcd(t, cli, e.ClientURL)
	wtEventually(t, 5*time.Second, "the refusal's end told", func() bool {
		_, states := obs.seen()
		return slices.Equal(states, []string{writer.CauseNoSpace, ""})
	})
	if took := time.Since(disarmed); took > time.Second {
		t.Errorf("the refusal's end was told %v after the disarm, want within 1s", took.Round(time.Millisecond))
	} else {
		t.Logf("the refusal's end was told %v after the disarm", took.Round(time.Millisecond))
	}
	if standby.IsLeader() || !leader.IsLeader() {
		t.Errorf("the standby leads (%v), the leader (%v): want the leader to lead still", standby.IsLeader(), leader.IsLeader())
	}
}
