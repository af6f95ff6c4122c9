// Reporting: Warning Events (and the Observer's count) for every name not published as asked,
// once per rejection while it lasts.

package kubesource

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	dnsrecord "github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// reportedSet is the set of rejections last reported on one object (of one incarnation).
type reportedSet struct {
	uid string
	set map[source.Rejection]struct{}
}

// report records the rejections of one object (uid "" once it is gone) and emits those that
// were not reported on this incarnation of it before.
func (w *Watcher) report(ref dnsrecord.ObjectRef, uid string, rejected []source.Rejection) {
	prev := w.reported[ref]
	if prev.uid != uid {
		prev = reportedSet{}
	}
	if len(rejected) == 0 {
		delete(w.reported, ref)
		return
	}
	next := reportedSet{uid: uid, set: make(map[source.Rejection]struct{}, len(rejected))}
	for _, r := range rejected {
		next.set[r] = struct{}{}
		if _, had := prev.set[r]; !had {
			w.emit(r)
		}
	}
	w.reported[ref] = next
}

// emit records a Warning Event for r on the object that asked for it (if it still exists) and
// counts it.
func (w *Watcher) emit(r source.Rejection) {
	obj, ki, ok := w.get(r.Object)
	if !ok {
		return
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	msg := r.Reason
	if r.Hostname != "" {
		msg = r.Hostname + ": " + r.Reason
	}
	w.recorder.Event(&corev1.ObjectReference{
		Kind: r.Object.Kind, APIVersion: apiVersionOf(ki.kind, ki.version),
		Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUID(),
	}, corev1.EventTypeWarning, string(r.Cause), msg)
	w.observer.Rejected(r.Object.Kind, r.Cause)
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
