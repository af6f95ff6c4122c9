package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// churnBatch is the changes of one transaction of the churner: a writer like gatewaydns's commits
// many names at once, and a transaction is one revision (one watch event batch) in etcd.
const churnBatch = 100

// churnRec is one record of the corpus as the churner left it in etcd.
type churnRec struct {
	key, value string
	present    bool
	changed    int // times written, to vary the value
}

// churner changes the records of a dataset in etcd: it rewrites a record with another TTL, or
// deletes it (one change in deleteEvery) and puts it back at its next turn, so that about a
// tenth of the names are missing at any time. Each worker owns its share of the records, so
// that the changes of one record stay in order, and no transaction names a key twice.
type churner struct {
	cli   *clientv3.Client
	parts [][]churnRec
	batch int // changes per transaction; churnBatch when 0

	puts, deletes atomic.Int64
}

const deleteEvery = 10

func newChurner(cli *clientv3.Client, recs []kv, workers int) *churner {
	c := &churner{cli: cli, parts: make([][]churnRec, workers)}
	r := rand.New(rand.NewPCG(17, uint64(len(recs))))
	for n, i := range r.Perm(len(recs)) {
		w := n % workers
		c.parts[w] = append(c.parts[w], churnRec{key: recs[i].Key, value: recs[i].Value, present: true})
	}
	return c
}

// next is the change to r: an op for a transaction, and whether it deletes.
func (r *churnRec) next(rnd *rand.Rand) (clientv3.Op, bool) {
	r.changed++
	if r.present && rnd.IntN(deleteEvery) == 0 {
		r.present = false
		return clientv3.OpDelete(r.key), true
	}
	r.present = true
	ttl := fmt.Sprintf(`"ttl":%d`, 300+r.changed%100+1) // never the original 300
	return clientv3.OpPut(r.key, strings.Replace(r.value, `"ttl":300`, ttl, 1)), false
}

// run makes changes until ctx ends or, when total > 0, until it has made total. rate > 0 paces
// them: each worker commits its transactions at fixed times, so that the changes per second
// hold at rate as long as etcd keeps up (a late worker catches up at once). It returns the
// changes committed; a transaction cut short by the end of ctx is not counted and no error.
func (c *churner) run(ctx context.Context, rate, total int) (int64, error) {
	var done, reserved atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(c.parts))
	start := time.Now()
	for w, part := range c.parts {
		batch := min(cmp.Or(c.batch, churnBatch), len(part))
		if batch == 0 {
			continue
		}
		var every time.Duration
		if rate > 0 {
			every = time.Duration(float64(time.Second) * float64(batch*len(c.parts)) / float64(rate))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), 42))
			next := 0
			for k := 0; ; k++ {
				n := batch
				if total > 0 {
					left := int64(total) - reserved.Add(int64(batch)) + int64(batch)
					if left <= 0 {
						return
					}
					n = int(min(int64(batch), left))
				}
				if every > 0 {
					wait := time.Until(start.Add(time.Duration(k) * every))
					if wait > 0 {
						select {
						case <-ctx.Done():
							return
						case <-time.After(wait):
						}
					}
				}
				ops := make([]clientv3.Op, n)
				dels := 0
				for i := range ops {
					op, del := part[next].next(rnd)
					ops[i] = op
					if del {
						dels++
					}
					next = (next + 1) % len(part)
				}
				if _, err := c.cli.Txn(ctx).Then(ops...).Commit(); err != nil {
					if ctx.Err() == nil || !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
						errs <- fmt.Errorf("etcd: churning %d records: %w", n, err)
					}
					return
				}
				done.Add(int64(n))
				c.puts.Add(int64(n - dels))
				c.deletes.Add(int64(dels))
			}
		}()
	}
	wg.Wait()
	close(errs)
	return done.Load(), <-errs
}

// restore puts back, as first written, every record the churner left deleted, so that the zone
// holds every name of the dataset again; it returns how many. Not while run runs.
func (c *churner) restore(ctx context.Context) (int, error) {
	var back []kv
	for _, part := range c.parts {
		for i := range part {
			if r := &part[i]; !r.present {
				back = append(back, kv{Key: r.key, Value: r.value})
				r.present = true
			}
		}
	}
	return len(back), loadRecords(ctx, c.cli, back, 4)
}
