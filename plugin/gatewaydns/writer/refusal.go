package writer

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
)

// A refusal is a write etcd answered with "no" for a reason of the store's, not a failure to
// reach it: a full database (the NOSPACE alarm), too many requests, a corrupt member's alarm,
// a permission, a request too large. Reachability says nothing of it (etcd answers), so it is
// made loud on its own: every refused transaction is counted by cause, the cause etcd refuses
// the writes for is logged when it begins and when it ends, the names whose changes wait are
// failures of their own (an Event on their objects, writer_failing_names), and the retry does
// not wait out a back-off: it is made as soon as a probe finds the cause gone.

// The causes of a refusal, as the metrics label them.
const (
	CauseNoSpace          = "no-space"
	CauseTooManyRequests  = "too-many-requests"
	CausePermissionDenied = "permission-denied"
	CauseTooLarge         = "too-large"
	CauseCorrupt          = "corrupt"
	CauseOther            = "other"
)

// RefusalCauses are every cause a refusal is counted under.
var RefusalCauses = []string{CauseNoSpace, CauseTooManyRequests, CausePermissionDenied, CauseTooLarge, CauseCorrupt, CauseOther}

// RefusalObserver is an optional part of Observer: told of every transaction etcd refused, and
// of the cause etcd refuses the writer's writes for as a whole ("" once a write lands again),
// on changes only. A refusal of some keys only (a permission, a name too large) is a name's
// failure (Observer.Failed), not a refusal of the writes as a whole.
type RefusalObserver interface {
	Refused(cause string, err error)
	Refusing(cause string, err error)
}

// refusalOf tells whether err is etcd refusing a write, and why.
func refusalOf(err error) (cause string, ok bool) {
	switch {
	case err == nil, retriable(err), errors.Is(err, context.Canceled), errors.Is(err, ErrNotLeader), errors.Is(err, errStale),
		// A read's history gone or not there yet (a watch of a campaign after a restore): no
		// write was refused.
		errors.Is(err, rpctypes.ErrCompacted), errors.Is(err, rpctypes.ErrFutureRev),
		// The records' lease is gone (expired, or younger than a snapshot etcd was restored
		// from): the term ends with it (leaseLost) and the next takes a new one.
		errors.Is(err, rpctypes.ErrLeaseNotFound):
		return "", false
	case errors.Is(err, rpctypes.ErrNoSpace):
		return CauseNoSpace, true
	case errors.Is(err, rpctypes.ErrTooManyRequests):
		return CauseTooManyRequests, true
	case permissionDenied(err):
		return CausePermissionDenied, true
	case perKey(err):
		return CauseTooLarge, true
	case errors.Is(err, rpctypes.ErrCorrupt):
		return CauseCorrupt, true
	}
	var answer rpctypes.EtcdError
	if errors.As(err, &answer) && answer.Code() != codes.Unavailable && answer.Code() != codes.DeadlineExceeded {
		return CauseOther, true
	}
	return "", false
}

// refusedAll tells whether err refuses the writes as a whole (not some keys of them).
func refusedAll(err error) (cause string, ok bool) {
	cause, ok = refusalOf(err)
	return cause, ok && !perKey(err)
}

// hints say what an operator does about a refusal.
var hints = map[string]string{
	CauseNoSpace:         "etcd's database reached its quota (NOSPACE alarm): compact and defragment it, or raise --quota-backend-bytes, then `etcdctl alarm disarm`",
	CauseTooManyRequests: "etcd applies more slowly than it commits: it is overloaded or its disk is slow",
	CauseCorrupt:         "a member's data differs from the others' (CORRUPT alarm): replace that member, then `etcdctl alarm disarm`",
}

// wait is err as told of a name whose change waits for etcd to take writes again.
func wait(cause string, err error) error {
	if h, ok := hints[cause]; ok {
		return fmt.Errorf("etcd refused the write: %w (%s); retried as soon as it takes writes again", err, h)
	}
	return fmt.Errorf("etcd refused the write: %w; retried as soon as it takes writes again", err)
}

// refused counts a transaction etcd refused, and makes cause the refusal's state when it
// refuses the writes as a whole.
func (w *Writer) refused(err error) {
	cause, ok := refusalOf(err)
	if !ok {
		return
	}
	ro, listens := w.obs.(RefusalObserver)
	if !listens {
		return
	}
	ro.Refused(cause, err)
	if !perKey(err) {
		w.refusing.Set(cause, func(string) { ro.Refusing(cause, wait(cause, err)) })
	}
}

// accepted ends the refusal's state: a write landed.
func (w *Writer) accepted() {
	if ro, ok := w.obs.(RefusalObserver); ok {
		w.refusing.Set("", func(string) { ro.Refusing("", nil) })
	}
}

// Probes for the end of a refusal: a list of the alarms is a raft round without a write, every
// 250 ms; a write, where a write is what tells (too many requests), every second.
const (
	alarmProbeEvery = 250 * time.Millisecond
	writeProbeEvery = time.Second
)

// whenAccepted returns a channel closed once etcd takes the writes it refused for cause again,
// as a probe finds, or never when ctx ends first; the probe's goroutine ends with either. A
// NOSPACE or CORRUPT alarm is over when etcd no longer lists it. Any other cause is over when a
// write of term's own key lands (its value again, fenced on the term, so that a deposed leader
// writes nothing); without a term, after writeProbeEvery.
func (w *Writer) whenAccepted(ctx context.Context, cause string, term *Term) <-chan struct{} {
	ok := make(chan struct{})
	alarm, isAlarm := map[string]pb.AlarmType{CauseNoSpace: pb.AlarmType_NOSPACE, CauseCorrupt: pb.AlarmType_CORRUPT}[cause]
	every := writeProbeEvery
	if isAlarm {
		every = alarmProbeEvery
	}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if w.probe(ctx, alarm, isAlarm, term) {
				close(ok)
				return
			}
		}
	}()
	return ok
}

// probe asks etcd once whether it takes writes again.
func (w *Writer) probe(ctx context.Context, alarm pb.AlarmType, isAlarm bool, term *Term) bool {
	pctx, cancel := context.WithTimeout(ctx, w.cfg.AttemptTimeout)
	defer cancel()
	if isAlarm {
		resp, err := w.client.AlarmList(pctx)
		if err != nil {
			return false
		}
		for _, a := range resp.Alarms {
			if a.Alarm == alarm {
				return false
			}
		}
		return true
	}
	if term == nil {
		return true
	}
	_, err := w.client.Txn(pctx).If(term.Fence()).
		Then(clientv3.OpPut(term.Key, w.cfg.Identity, clientv3.WithIgnoreLease())).Commit()
	return err == nil
}
