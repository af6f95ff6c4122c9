// The Normal Events of what an object published: one per change the writer told (published.go).

package kubesource

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The reasons of the Normal Events on an object whose published names changed.
const (
	// ReasonPublished: the object's names are in etcd, as of the revision the message says.
	ReasonPublished = "Published"
	// ReasonWithdrawn: the object publishes no name any more.
	ReasonWithdrawn = "Withdrawn"
)

// maxMessageNames bounds the names an Event message lists; the rest are counted.
const maxMessageNames = 10

// Published records what the writer found its owner publishing after one reconcile, tells
// each change that is news as a Normal Event on its object, and has the DNSEndpoints behind
// the names reported look at their status again. It is called from the writer's goroutine and
// does not block: the Event broadcaster and the status queue take it from there. Only a leader
// reconciles, so only the leader tells.
func (w *Watcher) Published(p Publication) {
	news, endpoints := w.published.apply(p, w.desired.Sources)
	for _, a := range news {
		reason := ReasonPublished
		if len(a.Names) == 0 {
			reason = ReasonWithdrawn
		}
		w.event(a.Object, corev1.EventTypeNormal, reason, announcementMessage(a))
	}
	if sw := w.status.Load(); sw != nil {
		for _, ref := range endpoints {
			sw.reported(ref)
			sw.queue.Add(ref)
		}
	}
}

// announcementMessage is what an Event says of a.
func announcementMessage(a announcement) string {
	switch {
	case len(a.Names) > 0:
		return fmt.Sprintf("Published in etcd at revision %d: %s", a.Revision, listNames(a.Names))
	case a.Revision > 0:
		return fmt.Sprintf("Withdrawn from etcd at revision %d: %s", a.Revision, listNames(a.Was))
	default:
		return "No longer published: " + listNames(a.Was)
	}
}

// listNames lists names, the first maxMessageNames of them.
func listNames(names []string) string {
	if len(names) <= maxMessageNames {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxMessageNames], ", "), len(names)-maxMessageNames)
}
