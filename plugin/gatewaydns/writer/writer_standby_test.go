package writer_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// TestAStandbyKeepsNoQueueAndItsTermCoversWhatItSaw: a million names enqueued on a standby
// cost it no memory to speak of (it used to keep every one until it led), and when it takes
// over, its first full resync publishes a change it saw while standing by.
func TestAStandbyKeepsNoQueueAndItsTermCoversWhatItSaw(t *testing.T) {
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	a, b := wtName("a"), wtName("b")
	d := wtWant(wtEP(a, "10.0.0.1"))
	cfg := writer.Config{Owner: "c1", Desired: d, ElectionTTL: time.Second}
	leader, stopLeader := wtStart(t, e.Client(t), cfg)
	wtEventually(t, 10*time.Second, "the first leads", leader.IsLeader)
	standby, _ := wtStart(t, e.Client(t), cfg)

	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	names := make([]string, 1000)
	for batch := range 1000 {
		for i := range names {
			names[i] = fmt.Sprintf("n%d-%d.eu1.%s", batch, i, wtZone)
		}
		standby.Enqueue(names...)
	}
	grew := int64(heap()) - int64(before)
	t.Logf("a million names enqueued on the standby: the heap grew by %d KiB", grew/1024)
	if grew > 8<<20 {
		t.Errorf("a million names enqueued on a standby grew the heap by %d MiB, want it bounded (< 8 MiB)", grew>>20)
	}

	d.set(wtEP(b, "10.0.0.2"))
	standby.Enqueue(b)
	stopLeader()
	wtEventually(t, 10*time.Second, "the standby leads", standby.IsLeader)
	wtEventually(t, 10*time.Second, "its first resync publishes what it saw while standing by", wtHostsAre(t, cli, b, "c1=10.0.0.2"))
}
