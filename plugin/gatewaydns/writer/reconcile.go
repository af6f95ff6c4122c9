package writer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/store"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/txtregistry"
)

// maxReplans is how often a reconcile reads and plans again the names whose commit found
// their keys changed since they were read, before it reports them failed (the next resync
// tries again).
const maxReplans = 3

// Reconcile makes the records of names what Desired wants now. It fails with ErrNotLeader when
// this replica does not lead. Names that cannot be read or written are in Result.Failed and
// do not stop the others; err is for what stopped the whole reconcile (deposed, etcd
// unreachable).
func (w *Writer) Reconcile(ctx context.Context, names []string) (Result, error) {
	term, lease := w.current()
	if term == nil {
		return Result{}, ErrNotLeader
	}
	return w.reconcile(ctx, term, lease, names, nil)
}

// Resync reconciles every name Desired wants and every name this owner has keys for (found in
// Zones): what a key deleted by hand, or any other drift, needs.
func (w *Writer) Resync(ctx context.Context) (Result, error) {
	term, lease := w.current()
	if term == nil {
		return Result{}, ErrNotLeader
	}
	return w.resync(ctx, term, lease)
}

func (w *Writer) resync(ctx context.Context, term *Term, lease clientv3.LeaseID) (Result, error) {
	own, adopt, scanFailed, err := w.scanOwn(ctx)
	if err != nil {
		return Result{}, err
	}
	// reconcile drops the duplicates.
	synced := w.cfg.Desired.Synced() // before Names: what they hold then is the whole of it
	names := append(w.cfg.Desired.Names(), adopt...)
	for _, k := range own {
		if k.name != "" {
			names = append(names, k.name)
		}
	}
	res, err := w.reconcileTelling(ctx, term, lease, names, nil, synced)
	if err == nil {
		w.settleElection() // it leads and has synced: names that failed are reported, not waited for
	}
	if err == nil && len(res.Failed) == 0 && scanFailed == 0 {
		w.obs.Synced(time.Now())
	}
	return res, err
}

// ownKey is one of this owner's keys that a scan found: the name it is a record of ("" for a
// key that is not a record's) and its lease. A scan keeps only these of a zone's keys.
type ownKey struct {
	name  string
	lease int64
}

// zones are the zones the writer may write: Zones, or the root of Prefix ("") without them.
func (w *Writer) zones() []string {
	if len(w.cfg.Zones) == 0 {
		return []string{""}
	}
	return w.cfg.Zones
}

// zonePrefix is the key prefix of zone z (of w.zones).
func (w *Writer) zonePrefix(z string) string { return record.NamePath(w.cfg.Prefix, z) + "/" }

// scanOwn reads this owner's keys in Zones, and with a Registry the names of what it would
// take over from external-dns (adopt). A zone that cannot be read for a reason of its own
// (permission denied) is reported to the Observer and counted in failed; err is for etcd
// failing as a whole.
func (w *Writer) scanOwn(ctx context.Context) (own []ownKey, adopt []string, failed int, err error) {
	for _, z := range w.zones() {
		p := w.zonePrefix(z)
		// In pages at one revision, each page a request of its own: a zone of a million keys
		// is never one response. One attempt may take the whole Timeout: a page of a large
		// zone can take more than an AttemptTimeout on a loaded etcd, and a resync that never
		// completes repairs nothing.
		get := func(ctx context.Context, key string, opts ...clientv3.OpOption) (resp *clientv3.GetResponse, err error) {
			err = w.requestEach(ctx, w.cfg.Timeout, func(ctx context.Context) error {
				resp, err = w.client.Get(ctx, key, opts...)
				return err
			})
			return resp, err
		}
		var zoneOwn []ownKey
		var zoneAdopt []string
		_, err := store.ReadPages(ctx, get, p, 0, func(resp *clientv3.GetResponse) {
			for _, kv := range resp.Kvs {
				owner, adopt := w.scanned(kv)
				if owner == w.cfg.Owner {
					name, _ := record.RecordName(w.cfg.Prefix, string(kv.Key))
					zoneOwn = append(zoneOwn, ownKey{name: name, lease: kv.Lease})
				}
				zoneAdopt = append(zoneAdopt, adopt...)
			}
		})
		label := z
		if label == "" {
			label = p
		}
		if err != nil {
			if !perKey(err) {
				return nil, nil, 0, fmt.Errorf("reading %s: %w", p, err)
			}
			w.reportFailure(label, err)
			failed++
			continue
		}
		w.reports.settled(label)
		own = append(own, zoneOwn...)
		adopt = append(adopt, zoneAdopt...)
	}
	return own, adopt, failed, nil
}

// scanned is kv's owner field and, with a Registry, the names whose reconcile may take kv over
// from external-dns (adoptionNames): the value is parsed once for both, as a full resync reads
// every key of the zones.
func (w *Writer) scanned(kv *mvccpb.KeyValue) (owner string, adopt []string) {
	if w.cfg.Registry == nil {
		return record.OwnerOf(kv.Value), nil
	}
	v, err := record.ParseValue(kv.Value)
	if err != nil {
		return record.OwnerOf(kv.Value), nil
	}
	return v.Owner, w.adoptionNames(string(kv.Key), v)
}

// adoptionNames are the names whose reconcile may take the value v at key over from
// external-dns: the name of a key of Registry.Owner, and the names a registry record of
// Registry.Owner speaks for. The plan decides; this only makes sure a resync visits them.
func (w *Writer) adoptionNames(key string, v record.Value) []string {
	reg := w.cfg.Registry
	n, ok := record.RecordName(w.cfg.Prefix, key)
	if !ok {
		return nil
	}
	if v.Owner == reg.Owner && reg.Owner != w.cfg.Owner {
		return []string{n}
	}
	if v.Text == "" || (v.Owner != "" && v.Owner != reg.Owner && v.Owner != w.cfg.Owner) {
		return nil
	}
	if owner, ok := txtregistry.OwnerOf(v.Text); ok && owner == reg.Owner {
		return reg.EndpointNames(n)
	}
	return nil
}

func (w *Writer) reconcile(ctx context.Context, term *Term, lease clientv3.LeaseID, names []string, since map[string]time.Time) (Result, error) {
	return w.reconcileTelling(ctx, term, lease, names, since, false)
}

// reconcileTelling is reconcile; settled tells a PublishedObserver that it is a full resync
// made with the sources synced (Publication.Settled).
func (w *Writer) reconcileTelling(ctx context.Context, term *Term, lease clientv3.LeaseID, names []string, since map[string]time.Time, settled bool) (Result, error) {
	w.opMu.Lock()
	defer w.opMu.Unlock()

	var res Result
	all := plan.NormalizeNames(names)
	deleted := make(map[string]bool)
	var err error
	for start := 0; start < len(all) && err == nil; start += namesPerPart {
		err = w.reconcilePart(ctx, term, lease, all[start:min(start+namesPerPart, len(all))], deleted, &res)
	}
	if err == nil {
		w.settle(all, &res)
	}
	if cause, refused := refusedAll(err); refused {
		// Each name whose change waits is a failure of its own, on its objects, until it lands.
		for n := range res.Failed {
			w.reportFailure(n, wait(cause, err))
		}
	}
	w.tellPublished(term, &res, settled && err == nil)
	if ao, ok := w.obs.(AdoptionObserver); ok && res.Adopted > 0 {
		ao.Adopted(res.Adopted)
	}
	w.tellProblems()
	if len(since) > 0 {
		now := time.Now()
		for _, n := range all {
			if _, failed := res.Failed[n]; !failed && err == nil && !since[n].IsZero() {
				w.obs.Propagated(n, now.Sub(since[n]))
			}
		}
	}
	return res, err
}

// namesPerPart is how many names a reconcile reads, plans and commits at a time. The keys
// read, the endpoints, the plan and the requests of a part are garbage once it is committed:
// a full resync of 100k names holds those of 4096 at a time, not of all of them (some 100 MB),
// and each part still fills inFlight transactions 32 times over, reads and commits.
const namesPerPart = 4096

// reconcilePart reads, plans and commits names, and again those whose commit found their keys
// changed since they were read. deleted is plan.Input.Deleted, shared by the parts.
func (w *Writer) reconcilePart(ctx context.Context, term *Term, lease clientv3.LeaseID, names []string, deleted map[string]bool, res *Result) error {
	for round := 1; ; round++ {
		res.stale = nil
		err := w.reconcileOnce(ctx, term, lease, names, deleted, res)
		if err != nil || len(res.stale) == 0 {
			res.stale = nil
			return err
		}
		if round == maxReplans {
			for _, n := range res.stale {
				err := fmt.Errorf("%w (%d times)", errStale, round)
				res.fail(n, err)
				w.reportFailure(n, err)
			}
			res.stale = nil
			return nil
		}
		// Another write changed these names' keys since they were read (a late transaction of
		// an earlier attempt, a hand edit): read them again and plan from what is there.
		names = plan.NormalizeNames(res.stale)
		deleted = nil // a replan is a plan of its own
	}
}

// reconcileOnce reads, plans and commits names once.
func (w *Writer) reconcileOnce(ctx context.Context, term *Term, lease clientv3.LeaseID, names []string, deleted map[string]bool, res *Result) error {
	current, readable, snap, rev, err := w.read(ctx, names, res)
	if err != nil {
		return err
	}
	d := w.cfg.Desired
	desired := make([]record.Endpoint, 0, len(readable))
	for _, n := range readable {
		if ep, ok := d.Endpoint(n); ok {
			desired = append(desired, ep)
		}
	}
	p := plan.Make(plan.Input{
		Prefix:    w.cfg.Prefix,
		Owner:     w.cfg.Owner,
		Policy:    w.cfg.Policy,
		Conflicts: w.cfg.Conflicts,
		Lease:     int64(lease),
		Allow:     w.cfg.Allow,
		Synced:    d.Synced(),
		Names:     readable,
		Desired:   desired,
		Current:   current,
		Registry:  w.cfg.Registry,
		Deleted:   deleted,
	})
	res.Conflicts = append(res.Conflicts, p.Conflicts...)
	res.Skipped = append(res.Skipped, p.Skipped...)
	for _, c := range p.Conflicts {
		w.reportConflict(c)
	}
	w.trackLost(ctx, readable, p.Conflicts, rev)
	for _, s := range p.Skipped {
		w.reportSkip(s)
	}
	if w.cfg.DryRun {
		w.plannedOnly(readable, p.Changes)
		return nil
	}
	err = w.apply(ctx, term, snap, p.Changes, res)
	w.observePublished(readable, current, p, res)
	if errors.Is(err, ErrNotLeader) {
		w.depose(term)
	}
	return err
}
