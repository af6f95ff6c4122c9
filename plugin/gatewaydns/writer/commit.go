package writer

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
)

// errStale is a commit refused because a key it touches changed since the plan read it: the
// names are read and planned again. (A refused fence is ErrNotLeader.)
var errStale = errors.New("keys changed since they were read")

// snapshot is what a plan was made from: the mod revision of each key read, and the revision
// each name was read at.
type snapshot struct {
	keys  map[string]int64
	names map[string]int64
}

// apply commits the changes in fenced transactions of at most BatchSize operations (one less:
// etcd's --max-txn-ops also counts the compares, one per operation and the fence), every
// name's change whole in one transaction (a change larger than a batch is split: its puts
// first, then its deletes, so the name is never without records), inFlight transactions at a
// time. A transaction that fails for one of its keys (permission denied, too large) is split
// until the failing names are found; they are recorded in res, the others committed. After an
// error of etcd as a whole no more transactions start, and the names of those and of the one
// that failed are recorded failed.
func (w *Writer) apply(ctx context.Context, term *Term, snap snapshot, changes []plan.Change, res *Result) error {
	limit := max(w.cfg.BatchSize-1, 1)
	var units [][]plan.Change // a batch of whole changes, or one change larger than a batch
	var batch []plan.Change
	ops := 0
	flush := func() {
		if len(batch) > 0 {
			units = append(units, batch)
		}
		batch, ops = nil, 0
	}
	for _, c := range changes {
		if c.Ops() > limit {
			flush()
			units = append(units, []plan.Change{c})
			continue
		}
		if ops+c.Ops() > limit {
			flush()
		}
		batch = append(batch, c)
		ops += c.Ops()
	}
	flush()
	parts := make([]Result, len(units))
	started, err := each(ctx, len(units), func(ctx context.Context, i int) error {
		if u := units[i]; len(u) == 1 && u[0].Ops() > limit {
			err := w.commitLarge(ctx, term, snap, u[0], &parts[i])
			if err != nil {
				parts[i].fail(u[0].Name, err) // some of its parts may be in: not all
			}
			return err
		}
		return w.commitSplitting(ctx, term, snap, units[i], &parts[i])
	})
	for i := range parts {
		res.add(&parts[i])
	}
	for _, u := range units[started:] {
		for _, c := range u {
			res.fail(c.Name, err)
		}
	}
	return err
}

// commitLarge writes one name's change that exceeds a batch: all puts, then the deletes.
func (w *Writer) commitLarge(ctx context.Context, term *Term, snap snapshot, c plan.Change, res *Result) error {
	limit := max(w.cfg.BatchSize-2, 1) // one less again: room for the claim guard
	var parts []plan.Change
	for i := 0; i < len(c.Puts); i += limit {
		// Only the first part claims the name: after it, the owner holds keys there.
		parts = append(parts, plan.Change{Name: c.Name, Puts: c.Puts[i:min(i+limit, len(c.Puts))], Claim: c.Claim && i == 0})
	}
	for i := 0; i < len(c.Deletes); i += limit {
		end := min(i+limit, len(c.Deletes))
		// Only the last part withdraws: before it, the owner still holds keys there.
		part := plan.Change{Name: c.Name, Deletes: c.Deletes[i:end], Withdraws: c.Withdraws && end == len(c.Deletes)}
		if i == 0 {
			part.Adopted = c.Adopted // counted once, with the first part of the deletes
		}
		parts = append(parts, part)
	}
	for _, p := range parts {
		if err := w.commit(ctx, term, snap, []plan.Change{p}, res); err != nil {
			if errors.Is(err, errStale) {
				res.stale = append(res.stale, c.Name)
				return nil
			}
			if perKey(err) {
				res.fail(c.Name, err)
				w.reportFailure(c.Name, err)
				return nil
			}
			return err
		}
	}
	return nil
}

func (w *Writer) commitSplitting(ctx context.Context, term *Term, snap snapshot, batch []plan.Change, res *Result) error {
	err := w.commit(ctx, term, snap, batch, res)
	if errors.Is(err, errStale) {
		for _, c := range batch {
			res.stale = append(res.stale, c.Name)
		}
		return nil
	}
	if err == nil || !perKey(err) {
		if err != nil {
			for _, c := range batch {
				res.fail(c.Name, err)
			}
		}
		return err
	}
	if len(batch) == 1 {
		res.fail(batch[0].Name, err)
		w.reportFailure(batch[0].Name, err)
		return nil
	}
	h := len(batch) / 2
	if err := w.commitSplitting(ctx, term, snap, batch[:h], res); err != nil {
		for _, c := range batch[h:] {
			res.fail(c.Name, err)
		}
		return err
	}
	return w.commitSplitting(ctx, term, snap, batch[h:], res)
}

// commit applies one batch in one transaction fenced on the term's election key and on what
// the plan read: each key put or deleted still has the mod revision it was read with (create
// revision 0: still absent). A transaction of an earlier attempt that reaches etcd late (sent
// to a member that froze, applied when it resumes) thus never overwrites a newer one of the
// same term. A claim (the owner's first keys on a name) also compares and puts the name's
// claim guard (claims.go): of two owners claiming a name at once only the first commits, and
// the other plans again and sees the older claim (the rule of exclusive mode, and of a CNAME
// beside other data, enforced by etcd). The Else branch reads the election key to tell the
// refusals apart: fence held -> errStale (replan), fence gone -> ErrNotLeader (depose).
func (w *Writer) commit(ctx context.Context, term *Term, snap snapshot, batch []plan.Change, res *Result) error {
	return w.commitWith(ctx, term, snap, batch, res, w.guards())
}

// commitWith is commit with claim guards or without (claims.go).
func (w *Writer) commitWith(ctx context.Context, term *Term, snap snapshot, batch []plan.Change, res *Result, guards bool) error {
	t := w.txnOf(term, snap, batch, guards)
	var resp *clientv3.TxnResponse
	err := w.request(ctx, func(ctx context.Context) (err error) {
		resp, err = w.client.Txn(ctx).If(t.cmps...).Then(t.ops...).Else(clientv3.OpGet(term.Key)).Commit()
		return err
	})
	if err != nil {
		w.refused(err)
		if t.guarded && permissionDenied(err) {
			// The guards' or the records'? Without the guards, as before them, tells.
			if err2 := w.commitWith(ctx, term, snap, batch, res, false); err2 != nil {
				return err2
			}
			w.refuseGuards(err)
			return nil
		}
		return err
	}
	w.accepted()
	if !resp.Succeeded {
		if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) == 1 && kvs[0].CreateRevision == term.Rev {
			return errStale
		}
		return ErrNotLeader
	}
	res.Txns++
	res.Puts += t.puts
	res.Deletes += t.dels
	res.Revision = resp.Header.Revision
	res.Adopted += t.adopted
	for _, c := range batch {
		res.committed(c.Name, resp.Header.Revision)
	}
	w.obs.Committed(t.puts, t.dels)
	return nil
}

// txn is the transaction of a batch of changes: its compares and operations, and what they
// do.
type txn struct {
	cmps                []clientv3.Cmp
	ops                 []clientv3.Op
	puts, dels, adopted int
	guarded             bool // it writes claim guards
}

// txnOf is the transaction of batch under term's fence, each key compared with what snap read
// of it; with guards, claims and withdrawals write their guard keys (claims.go).
func (w *Writer) txnOf(term *Term, snap snapshot, batch []plan.Change, guards bool) txn {
	t := txn{cmps: []clientv3.Cmp{term.Fence()}}
	for _, c := range batch {
		t.adopted += c.Adopted
		readAt, known := snap.names[c.Name]
		claim := c.Claim && known
		if claim {
			t.cmps = append(t.cmps, w.claimCompare(guards, c.Name, readAt))
			if guards {
				t.ops = append(t.ops, w.claimGuard(c))
				t.guarded = true
			}
		}
		if c.Withdraws && guards {
			t.ops = append(t.ops, clientv3.OpDelete(w.guardKey(c.Name)))
			t.guarded = true
		}
		expect := func(k string) {
			switch rev, read := snap.keys[k]; {
			case read:
				t.cmps = append(t.cmps, clientv3.Compare(clientv3.ModRevision(k), "=", rev))
			case claim && !guards: // the range compare covers it, and so compares stay <= ops
			default:
				t.cmps = append(t.cmps, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
			}
		}
		for _, p := range c.Puts {
			var opts []clientv3.OpOption
			if p.Lease != 0 {
				opts = append(opts, clientv3.WithLease(clientv3.LeaseID(p.Lease)))
			}
			t.ops = append(t.ops, clientv3.OpPut(p.Key, string(p.Value), opts...))
			expect(p.Key)
			t.puts++
		}
		for _, d := range c.Deletes {
			t.ops = append(t.ops, clientv3.OpDelete(d))
			expect(d)
			t.dels++
		}
	}
	return t
}

// perKey tells the errors that come from a key of the request, not from etcd or the network:
// splitting the request isolates them.
func perKey(err error) bool {
	if permissionDenied(err) {
		return true
	}
	for _, e := range []error{rpctypes.ErrTooManyOps, rpctypes.ErrGRPCTooManyOps,
		rpctypes.ErrRequestTooLarge, rpctypes.ErrGRPCRequestTooLarge} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
