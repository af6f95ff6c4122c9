package writer_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

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

// fillEtcd writes 1 MiB values over one key until etcd raises its NOSPACE alarm.
func fillEtcd(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	big := strings.Repeat("x", 1<<20)
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := cli.Put(ctx, "/filler", big)
		cancel()
		if errors.Is(err, rpctypes.ErrNoSpace) {
			return
		}
		if err != nil {
			t.Fatalf("filling etcd: %v", err)
		}
		if i > 4*quota>>20 {
			t.Fatal("etcd took four times its quota without raising NOSPACE")
		}
	}
}

// freeEtcd is the operator's runbook for NOSPACE: the filler deleted, the history compacted,
// the member defragmented; then the alarm is disarmed, and the time of that returned.
func freeEtcd(t *testing.T, e *testenv.Etcd, cli *clientv3.Client) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.Delete(ctx, "/filler")
	if err != nil {
		t.Fatalf("deleting the filler: %v", err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatalf("compacting: %v", err)
	}
	if _, err := cli.Defragment(ctx, e.ClientURL); err != nil {
		t.Fatalf("defragmenting: %v", err)
	}
	alarms, err := cli.AlarmList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alarms.Alarms {
		if _, err := cli.AlarmDisarm(ctx, (*clientv3.AlarmMember)(a)); err != nil {
			t.Fatalf("disarming %v: %v", a, err)
		}
	}
	return time.Now()
}

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

	fillEtcd(t, cli)
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

	disarmed := freeEtcd(t, e, cli)
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
