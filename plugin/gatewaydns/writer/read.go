package writer

import (
	"context"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/txtregistry"
)

// nameReadLimit bounds the keys one name's range read returns. A name holds a few records, but
// its range holds every name below it too, and the range of a zone's apex the whole zone: a
// name with more is read on in pages (readOn).
const nameReadLimit = 1000

// readPart is what one transaction of read found, merged in order once all are read.
type readPart struct {
	names  []string    // read, in order
	keys   [][]plan.KV // each name's records, every path of it
	revs   []int64     // the revision each name was read at
	failed []nameError // names that could not be read
}

type nameError struct {
	name string
	err  error
}

// read returns the keys one level below each name's key (and, with a Registry, below each of
// its registry names), of every owner, reading names in transactions of up to BatchSize
// range reads, inFlight at a time, the revision each name was read at (in snap.names), and the
// oldest of them. A name that cannot be read (permission denied) is recorded in res and left
// out of readable.
func (w *Writer) read(ctx context.Context, names []string, res *Result) (current []plan.KV, readable []string, snap snapshot, rev int64, err error) {
	perName := 1 // range reads per name, at most: with a registry, its names and the old format's
	if w.cfg.Registry != nil {
		perName += len(txtregistry.Types) + 1
	}
	step := max(w.cfg.BatchSize/perName, 1)
	var batches [][]string
	for i := 0; i < len(names); i += step {
		batches = append(batches, names[i:min(i+step, len(names))])
	}
	parts := make([]readPart, len(batches))
	if _, err := each(ctx, len(batches), func(ctx context.Context, i int) error {
		return w.readBatch(ctx, batches[i], &parts[i])
	}); err != nil {
		return nil, nil, snapshot{}, 0, err
	}
	snap = snapshot{keys: make(map[string]int64), names: make(map[string]int64, len(names))}
	for _, p := range parts {
		for _, f := range p.failed {
			res.fail(f.name, fmt.Errorf("reading: %w", f.err))
			w.reportFailure(f.name, fmt.Errorf("reading: %w", f.err))
		}
		for i, n := range p.names {
			if rev == 0 || p.revs[i] < rev {
				rev = p.revs[i]
			}
			for _, kv := range p.keys[i] {
				if _, dup := snap.keys[kv.Key]; dup {
					continue // a registry name that is also a name read
				}
				snap.keys[kv.Key] = kv.ModRevision
				current = append(current, kv)
			}
			readable = append(readable, n)
			snap.names[n] = p.revs[i]
		}
	}
	return current, readable, snap, rev, nil
}

// paths are the key prefixes read for name: its own, and with a Registry those of its
// registry names.
func (w *Writer) paths(name string) []string {
	ps := []string{record.NamePath(w.cfg.Prefix, name) + "/"}
	if w.cfg.Registry != nil {
		for _, e := range w.cfg.Registry.Names(name) {
			ps = append(ps, record.NamePath(w.cfg.Prefix, e.Name)+"/")
		}
	}
	return ps
}

// readBatch reads batch in one transaction into p. A transaction refused for one of its keys
// (permission denied) is split until the names that fail are found; err is for etcd failing
// as a whole.
func (w *Writer) readBatch(ctx context.Context, batch []string, p *readPart) error {
	var ops []clientv3.Op
	bases := make([][]string, len(batch)) // each name's paths, in the order of ops
	for i, n := range batch {
		bases[i] = w.paths(n)
		for _, path := range bases[i] {
			ops = append(ops, clientv3.OpGet(path, clientv3.WithPrefix(), clientv3.WithLimit(nameReadLimit)))
		}
	}
	var resp *clientv3.TxnResponse
	err := w.request(ctx, func(ctx context.Context) (err error) {
		resp, err = w.client.Txn(ctx).Then(ops...).Commit()
		return err
	})
	if err != nil {
		if !perKey(err) {
			return err
		}
		if len(batch) == 1 {
			p.failed = append(p.failed, nameError{batch[0], err})
			return nil
		}
		h := len(batch) / 2
		if err := w.readBatch(ctx, batch[:h], p); err != nil {
			return err
		}
		return w.readBatch(ctx, batch[h:], p)
	}
	i := 0
names:
	for b, n := range batch {
		var keys []plan.KV
		for _, base := range bases[b] {
			rr := resp.Responses[i].GetResponseRange()
			i++
			keys = appendRecords(keys, base, rr.Kvs)
			if !rr.More || len(rr.Kvs) == 0 {
				continue
			}
			// More below the name than the limit: read on in pages, at the same revision.
			err := w.readOn(ctx, base, string(rr.Kvs[len(rr.Kvs)-1].Key), resp.Header.Revision, func(r *clientv3.GetResponse) {
				keys = appendRecords(keys, base, r.Kvs)
			})
			if err != nil {
				if !perKey(err) {
					return err
				}
				p.failed = append(p.failed, nameError{n, err})
				continue names
			}
		}
		p.names = append(p.names, n)
		p.keys = append(p.keys, keys)
		p.revs = append(p.revs, resp.Header.Revision)
	}
	return nil
}

// appendRecords appends the records of kvs one level below base: the name's own, not those of
// the names below it.
func appendRecords(keys []plan.KV, base string, kvs []*mvccpb.KeyValue) []plan.KV {
	for _, kv := range kvs {
		k := string(kv.Key)
		if strings.Contains(k[len(base):], "/") {
			continue // a record of a name below
		}
		keys = append(keys, plan.KV{Key: k, Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision, Lease: kv.Lease})
	}
	return keys
}

// readOn reads the keys under base after the key after, at rev, in pages, each page a request
// of its own under the writer's limits.
func (w *Writer) readOn(ctx context.Context, base, after string, rev int64, page func(*clientv3.GetResponse)) error {
	get := func(ctx context.Context, key string, opts ...clientv3.OpOption) (resp *clientv3.GetResponse, err error) {
		// As the resync's pages: one may take longer than an attempt on a loaded etcd.
		err = w.requestEach(ctx, w.cfg.Timeout, func(ctx context.Context) error {
			resp, err = w.client.Get(ctx, key, opts...)
			return err
		})
		return resp, err
	}
	return store.ReadOn(ctx, get, base, after, rev, page)
}
