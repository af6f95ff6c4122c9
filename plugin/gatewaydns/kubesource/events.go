// Reporting: Warning Events (and the Observer's count) for every name not published as asked,
// once per rejection while it lasts.

package kubesource

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	dnsrecord "github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// DefaultPendingGrace is how long a rejection that waits on another controller (a route its
// Gateway has not accepted yet, a Gateway without an address yet) may last before it is
// reported: gateway controllers take a second or two, and a name that merely waits for them
// is normal work, worth no Event, count or alert.
const DefaultPendingGrace = 10 * time.Second

// pendingCauses are the causes that another controller's progress usually ends.
var pendingCauses = []source.Cause{source.CauseParentNotAccepted, source.CauseParentNotFound,
	source.CauseNoTargets, source.CauseNotProgrammed}

// told is one rejection while it lasts: when it was first seen, whether it was reported (an
// Event, counted) and whether it is in the current count (source_rejected_names). A replica
// that stops leading and leads again takes it back into the count but does not report it twice.
type told struct {
	since   time.Time
	told    bool
	counted bool
}

// tracked are the rejections that last on one object (of one incarnation), or on one name.
type tracked struct {
	uid string
	set map[source.Rejection]*told
}

// report records the rejections of one object (uid "" once it is gone) and reports those that
// were not reported on this incarnation of it before, once they are due (tell).
func (w *Watcher) report(ref dnsrecord.ObjectRef, uid string, rejected []source.Rejection) {
	prev := w.reported[ref]
	if prev.uid != uid {
		w.untellAll(prev)
		prev = tracked{}
	}
	next := w.track(prev, uid, rejected)
	if len(next.set) == 0 {
		delete(w.reported, ref)
		return
	}
	w.reported[ref] = next
	if wait := w.dueIn(next); wait > 0 {
		w.queue.AddAfter(ref, wait) // looked at again once the oldest waiting one is due
	}
}

// track carries what is known of each rejection still in cur over from prev, tells those due,
// and takes the ones that ended out of the current count.
func (w *Watcher) track(prev tracked, uid string, cur []source.Rejection) tracked {
	next := tracked{uid: uid, set: make(map[source.Rejection]*told, len(cur))}
	now := time.Now()
	for _, r := range cur {
		st := prev.set[r]
		if st == nil {
			st = &told{since: now}
		}
		next.set[r] = st
		w.tell(r, st, now)
	}
	for r, st := range prev.set {
		if _, still := next.set[r]; !still {
			w.uncount(r, st)
		}
	}
	return next
}

// dueIn is how long until the first rejection of t that waits on its grace is due; 0 if none.
func (w *Watcher) dueIn(t tracked) time.Duration {
	var wait time.Duration
	for r, st := range t.set {
		if st.told || !w.leading.Load() {
			continue
		}
		if left := w.grace(r) - time.Since(st.since); left > 0 && (wait == 0 || left < wait) {
			wait = left
		}
	}
	return wait
}

func (w *Watcher) grace(r source.Rejection) time.Duration {
	if !slices.Contains(pendingCauses, r.Cause) {
		return 0
	}
	if w.opts.PendingGrace != 0 {
		return max(0, w.opts.PendingGrace)
	}
	return DefaultPendingGrace
}

// tell reports r once, when this replica reports (it leads, see SetLeading) and r has lasted
// its grace, and counts it as current while it lasts.
func (w *Watcher) tell(r source.Rejection, st *told, now time.Time) {
	if !w.leading.Load() {
		return
	}
	if !st.told {
		if now.Sub(st.since) < w.grace(r) {
			return
		}
		st.told = true
		w.emit(r)
	}
	if !st.counted {
		st.counted = true
		w.recount(r, +1)
	}
}

// uncount takes r out of the current count: it ended, or this replica stopped reporting.
func (w *Watcher) uncount(r source.Rejection, st *told) {
	if st.counted {
		st.counted = false
		w.recount(r, -1)
	}
}

func (w *Watcher) recount(r source.Rejection, delta int) {
	k := currentKey{r.Object.Kind, r.Cause}
	w.current[k] += delta
	w.observer.Rejecting(r.Object.Kind, r.Cause, w.current[k])
}

func (w *Watcher) untellAll(t tracked) {
	for r, st := range t.set {
		w.uncount(r, st)
	}
}

// currentKey counts the rejections reported and lasting, by the metric's labels.
type currentKey struct {
	kind  string
	cause source.Cause
}

// SetLeading tells a Watcher whose Options.ReportWhenLeading is set whether its replica leads
// the owner: only the leader reports, so that replicas do not each raise the same Event and
// count. On leading the worker reports what lasts and was not reported yet; on losing the lead
// its current count goes to zero (the new leader's counts).
func (w *Watcher) SetLeading(leading bool) {
	if !w.opts.ReportWhenLeading || w.leading.Swap(leading) == leading {
		return
	}
	w.queue.Add(leadershipChanged)
}

// leadershipChanged is the queue item that has the worker tell or untell everything it tracks.
var leadershipChanged = dnsrecord.ObjectRef{Kind: "\x00leadership"}

func (w *Watcher) retell() {
	now := time.Now()
	sets := make([]tracked, 0, len(w.reported)+len(w.conflicts))
	for ref, t := range w.reported {
		sets = append(sets, t)
		if wait := w.dueIn(t); wait > 0 {
			w.queue.AddAfter(ref, wait)
		}
	}
	for _, t := range w.conflicts {
		sets = append(sets, t)
	}
	for _, t := range sets {
		if !w.leading.Load() {
			w.untellAll(t)
			continue
		}
		for r, st := range t.set {
			w.tell(r, st, now)
		}
	}
}

// emit records a Warning Event for r on the object that asked for it (if it still exists) and
// counts it.
func (w *Watcher) emit(r source.Rejection) {
	msg := r.Reason
	if r.Hostname != "" {
		msg = r.Hostname + ": " + r.Reason
	}
	if w.event(r.Object, corev1.EventTypeWarning, string(r.Cause), msg) {
		w.observer.Rejected(r.Object.Kind, r.Cause)
	}
}

// event records an Event on the object ref names, if it still exists (false if not).
func (w *Watcher) event(ref dnsrecord.ObjectRef, eventType, reason, msg string) bool {
	obj, ki, ok := w.get(ref)
	if !ok {
		return false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	w.recorder.Event(&corev1.ObjectReference{
		Kind: ref.Kind, APIVersion: apiVersionOf(ki.kind, ki.version),
		Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUID(),
	}, eventType, reason, msg)
	return true
}

// Reject reports a problem found after the mapping (a name the store refused, a name lost to an
// older owner) the way the mapping's own rejections are: a Warning Event on the object, counted.
func (w *Watcher) Reject(r source.Rejection) { w.emit(r) }

// eventRequestTimeout bounds one Event write, so that a black-holed API server holds the
// broadcaster's goroutine for at most this long while the Watcher runs.
const eventRequestTimeout = 10 * time.Second

// eventSink is the record.EventSink of the broadcaster. client-go's EventSinkImpl sends its
// requests without a context, so on a black-holed API server its goroutine would hang on a
// write long after Stop; this one sends each under the Watcher's context and a timeout, so that
// the write ends at Stop and the broadcaster's goroutine (which gives up once its context is
// done) returns with it.
type eventSink struct {
	ctx    context.Context
	events typedcorev1.EventInterface
}

func (s eventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	ctx, cancel := context.WithTimeout(s.ctx, eventRequestTimeout)
	defer cancel()
	return s.events.CreateWithEventNamespaceWithContext(ctx, e)
}

func (s eventSink) Update(e *corev1.Event) (*corev1.Event, error) {
	ctx, cancel := context.WithTimeout(s.ctx, eventRequestTimeout)
	defer cancel()
	return s.events.UpdateWithEventNamespaceWithContext(ctx, e)
}

func (s eventSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	ctx, cancel := context.WithTimeout(s.ctx, eventRequestTimeout)
	defer cancel()
	return s.events.PatchWithEventNamespaceWithContext(ctx, e, data)
}
