package publish

import (
	"fmt"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/kubesource"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/statelog"
)

// writerEvents reports what the writer could not do on the objects behind the name, as
// Warning Events, besides counting it.
type writerEvents struct {
	*metrics
	kube *kubesource.Watcher
	lead *leadership
}

// Leading: only the leader reports rejections, so that the replicas of an owner do not each
// raise the same Event and count it.
func (w writerEvents) Leading(leading bool) {
	w.metrics.Leading(leading)
	w.kube.SetLeading(leading)
	w.lead.changed(leading)
}

// leadership logs when this replica starts and stops leading its owner, so that the logs of
// the replicas say which one writes, and since when.
type leadership struct {
	owner, identity string
	dryRun          bool
	state           statelog.State[bool]
}

func (l *leadership) changed(leading bool) {
	l.state.Set(leading, func(bool) {
		switch {
		case leading && l.dryRun:
			log.Infof("This replica (%s) leads the dry-run writers of owner %q: it logs what they would write", l.identity, l.owner)
		case leading:
			log.Infof("This replica (%s) leads owner %q: it writes the owner's records", l.identity, l.owner)
		default:
			log.Infof("This replica (%s) no longer leads owner %q; it stands by", l.identity, l.owner)
		}
	})
}

func (w writerEvents) Conflict(c plan.Conflict) {
	w.metrics.Conflict(c)
	reason := c.Detail
	if reason == "" {
		reason = fmt.Sprintf("owner %q holds this name in exclusive mode (claimed at revision %d, ours %d)", c.Winner, c.WinnerRevision, c.OwnRevision)
	}
	if c.Sources == nil { // no objects given: every object behind the name
		w.rejectName(c.Name, source.CauseConflict, reason)
		return
	}
	w.reject(c.Sources, c.Name, source.CauseConflict, reason) // the objects not told yet
}

// ClaimGuardsRefused: the etcd role predates the claim guards; claims still work, at the cost
// the guards were made to save. Said once per writer.
func (w writerEvents) ClaimGuardsRefused(prefix string, err error) {
	log.Warningf("Writer for owner %q may not write claim guards under %s (%v): claims compare each name's whole key range instead, which for a zone's apex reads the zone; grant the role readwrite on its names' paths below %s (deploy/etcd/roles.sh)", w.owner, prefix, err, prefix)
}

func (w writerEvents) Failed(name string, err error) {
	w.metrics.Failed(name, err)
	w.rejectName(name, source.CausePublishFailed, err.Error())
}

func (w writerEvents) rejectName(name string, cause source.Cause, reason string) {
	ep, ok := w.kube.Desired().Endpoint(name)
	if !ok { // not a name: a zone the full sync could not read, or the election
		w.warnOnce(name, reason)
		return
	}
	w.reject(ep.Sources, name, cause, reason)
}

// reject reports name on each of objects.
func (w writerEvents) reject(objects []record.ObjectRef, name string, cause source.Cause, reason string) {
	for _, ref := range objects {
		w.kube.Reject(source.Rejection{Object: ref, Hostname: name, Cause: cause, Reason: reason})
	}
}
