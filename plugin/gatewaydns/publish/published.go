package publish

import (
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/kubesource"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// Published hands what the writer found its owner publishing after a reconcile to the sources,
// which tell it on the objects behind the names: a Normal Event per change, a DNSEndpoint's
// Ready condition (kubesource.Watcher.Published).
func (w writerEvents) Published(p writer.Publication) {
	names := make([]kubesource.PublishedName, len(p.Names))
	for i, n := range p.Names {
		names[i] = kubesource.PublishedName{Name: n.Name, Held: n.Held, Revision: n.Revision,
			Committed: n.Committed, Withheld: n.Withheld}
		if n.Failed != nil {
			names[i].Failed = n.Failed.Error()
		}
	}
	w.kube.Published(kubesource.Publication{Term: p.Term, Settled: p.Settled, Names: names})
}
