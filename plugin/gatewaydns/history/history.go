// Package history reads etcd's history for incremental zone transfers: what the keys of a zone
// were at a past revision, where the index's journal (index/journal.go) does not reach back that
// far, as after a restart or on a replica that has just taken over. A secondary that asks for an
// IXFR from serial S held the zone as it was at revision S; the keys that changed after S each
// had, before their first change, the value they had at S. etcd keeps every revision until a
// compaction, and a watch from S+1 with previous values (WithPrevKV) streams those changes in
// order: the first change of each key carries the value it had at S.
//
// etcd answers such a watch by reading every revision since S, of every key and not only the
// zone's, in one go, while its writes wait: about 0.1 s for 65,536 revisions on this machine's
// etcd (a watch from 1,000 revisions back took as long: etcd syncs new watches every 100 ms).
// So the read is bounded in revisions, and in keys (a difference of more is not sent anyway),
// and a secondary further back, or behind a compaction, gets the whole zone.
package history

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
)

// Bounds of a read: DefaultMaxRevisions of etcd's history (the index's journal holds as many
// changes: index.DefaultJournalChanges), and Timeout in all.
const (
	DefaultMaxRevisions = 1 << 16
	Timeout             = 5 * time.Second
	// progressEvery is how often the read asks etcd whether it has sent every change up to
	// the end of the span: etcd tells so (a progress notification) only once the watch is
	// synced, and a zone with no change in the span sends nothing else.
	progressEvery = 100 * time.Millisecond
)

var (
	// ErrTooLong is a span longer than the bounds: more revisions since its start than
	// MaxRevisions, or more keys changed in it than MaxKeys.
	ErrTooLong = errors.New("history: longer than its bound")
	// ErrIncomplete is a change whose previous value etcd did not send (compacted meanwhile).
	ErrIncomplete = errors.New("history: a change without its previous value")
)

// Reader reads the history of one etcd.
type Reader struct {
	Client       *clientv3.Client
	MaxRevisions int64 // DefaultMaxRevisions when 0
	MaxKeys      int   // unbounded when 0
}

// Past is what the keys of dir (a key prefix ending in "/", and the key without that "/")
// that changed after revision from, up to revision to, were at from: each key's value then,
// nil where it had none. An error (etcd unreachable, the span compacted, longer than the
// bounds, Timeout passed, ctx done) says the history could not be read whole: nothing of it
// is returned.
func (r *Reader) Past(ctx context.Context, dir string, from, to int64) (map[string]*record.KV, error) {
	if r == nil || r.Client == nil {
		return nil, errors.New("history: no etcd client")
	}
	if to <= from {
		return map[string]*record.KV{}, nil
	}
	ctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), Timeout)
	defer cancel()
	own := strings.TrimSuffix(dir, "/")
	// The store's revision now: etcd reads every revision from from+1 up to it.
	now, err := r.Client.Get(ctx, own, clientv3.WithCountOnly())
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", dir, err)
	}
	if span := now.Header.Revision - from; span > r.maxRevisions() {
		return nil, fmt.Errorf("%w: %d revisions since %d, at most %d are read", ErrTooLong, span, from, r.maxRevisions())
	}
	w := store.NewWatches(r.Client) // a stream of its own, closed within a bound
	defer w.Close()
	wch := w.Watch(ctx, own, clientv3.WithPrefix(), clientv3.WithRev(from+1), clientv3.WithPrevKV(), clientv3.WithCreatedNotify())
	read := &reading{dir: dir, own: own, to: to, maxKeys: r.MaxKeys, past: map[string]*record.KV{}}
	if err := read.until(ctx, w, wch); err != nil {
		return nil, fmt.Errorf("history of %s from revision %d to %d: %w", dir, from, to, err)
	}
	return read.past, nil
}

func (r *Reader) maxRevisions() int64 {
	if r.MaxRevisions > 0 {
		return r.MaxRevisions
	}
	return DefaultMaxRevisions
}

// reading is one read of a span's changes.
type reading struct {
	dir, own string
	to       int64
	maxKeys  int
	past     map[string]*record.KV
}

// until takes the watch's responses until every change up to r.to is in: a change after it, or
// etcd's word (a progress notification) that it has sent every change up to it.
func (r *reading) until(ctx context.Context, w *store.Watches, wch clientv3.WatchChan) error {
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			_ = w.RequestProgress(ctx) // an error shows as the watch's, or as the timeout
		case resp, open := <-wch:
			if !open {
				return errors.New("the watch ended")
			}
			if err := resp.Err(); err != nil {
				return err
			}
			done, err := r.take(resp)
			if done || err != nil {
				return err
			}
		}
	}
}

// take notes the changes of one response; done tells that every change up to r.to is in.
func (r *reading) take(resp clientv3.WatchResponse) (done bool, err error) {
	for _, ev := range resp.Events {
		if ev.Kv.ModRevision > r.to {
			return true, nil
		}
		key := string(ev.Kv.Key)
		if key != r.own && !strings.HasPrefix(key, r.dir) {
			continue // a sibling that shares the prefix: /a/bc beside /a/b/
		}
		if _, seen := r.past[key]; seen {
			continue // the value at from is the one before the first change
		}
		created := ev.Type == clientv3.EventTypePut && ev.Kv.CreateRevision == ev.Kv.ModRevision
		switch {
		case created:
			r.past[key] = nil
		case ev.PrevKv == nil:
			return false, fmt.Errorf("%w: %s at revision %d", ErrIncomplete, key, ev.Kv.ModRevision)
		default:
			p := ev.PrevKv
			r.past[key] = &record.KV{Key: key, Value: p.Value, Lease: p.Lease, Revision: p.ModRevision, Created: p.CreateRevision}
		}
		if r.maxKeys > 0 && len(r.past) > r.maxKeys {
			return false, fmt.Errorf("%w: more than %d keys changed", ErrTooLong, r.maxKeys)
		}
	}
	return resp.IsProgressNotify() && resp.Header.Revision >= r.to, nil
}
