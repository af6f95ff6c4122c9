// A DNSEndpoint's status: status.observedGeneration, the generation read, and (Options.
// Conditions) what external-dns gives it from its status conditions on (kubernetes-sigs/
// external-dns #6609): status.endpoints, the entries taken, and two conditions. Accepted says
// whether every entry was understood; Ready whether the names are published in etcd, read from
// the same record of what each object published as the Normal Events (published.go).

package kubesource

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	dnsrecord "github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// The conditions of a DNSEndpoint and their reasons, as external-dns names them.
const (
	// ConditionAccepted: every spec entry was understood (True, Accepted), or some were
	// refused (False, Invalid).
	ConditionAccepted = "Accepted"
	// ConditionReady: the names are published in etcd (True, Programmed), or none is: the store
	// refused one (False, Failed), the domain filter, the policy or another owner's records
	// keep them all out (False, Filtered), or every entry was refused (False, Invalid).
	ConditionReady = "Ready"

	ReasonAccepted   = "Accepted"
	ReasonInvalid    = "Invalid"
	ReasonProgrammed = "Programmed"
	ReasonFailed     = "Failed"
	ReasonFiltered   = "Filtered"
)

// prunedRetry is how often the conditions are sent again while the CRD prunes them.
const prunedRetry = time.Minute

// maxConditionMessage is the API's bound on a condition's message.
const maxConditionMessage = 32768

// generations are, per DNSEndpoint, the generation last mapped into Desired and the one mapped
// when the writer last reported on its names: Ready speaks for a generation only once the
// writer has reconciled what it asks for (a target changed, its name already published, is not
// Programmed before it is committed). Safe for concurrent use; a nil *statusWriter ignores it.
type generations struct {
	mu          sync.Mutex
	mappedGen   map[dnsrecord.ObjectRef]int64
	reportedGen map[dnsrecord.ObjectRef]int64
}

// mapped records that generation gen of ref is in Desired (the worker, before its names are
// handed to the writer). unchanged: it changed no name's endpoint, so what the writer reported
// of the generation before holds for it too: there is nothing new to reconcile.
func (sw *statusWriter) mapped(ref dnsrecord.ObjectRef, gen int64, unchanged bool) {
	if sw == nil {
		return
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.mappedGen == nil {
		sw.mappedGen, sw.reportedGen = make(map[dnsrecord.ObjectRef]int64), make(map[dnsrecord.ObjectRef]int64)
	}
	if prev, ok := sw.mappedGen[ref]; ok && unchanged && sw.reportedGen[ref] == prev {
		sw.reportedGen[ref] = gen
	}
	sw.mappedGen[ref] = gen
}

// reported records that the writer reported on ref's names after its last mapped generation.
func (sw *statusWriter) reported(ref dnsrecord.ObjectRef) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if gen, ok := sw.mappedGen[ref]; ok {
		sw.reportedGen[ref] = gen
	}
}

// reportedOn tells whether the writer has reported on the names of generation gen of ref.
func (sw *statusWriter) reportedOn(ref dnsrecord.ObjectRef, gen int64) bool {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	g, ok := sw.reportedGen[ref]
	return ok && g == gen
}

func (sw *statusWriter) forget(ref dnsrecord.ObjectRef) {
	if sw == nil {
		return
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	delete(sw.mappedGen, ref)
	delete(sw.reportedGen, ref)
}

// writeStatus writes the status of the DNSEndpoint ref, if the cache does not hold it already,
// with a merge patch of the status subresource. A patch of the conditions carries the cached
// resourceVersion: it replaces the whole list, so it must not undo a write it did not see (a
// conflict is retried from the cache). One of observedGeneration alone sets that field only,
// as before the conditions, and cannot conflict.
func (w *Watcher) writeStatus(ctx context.Context, sw *statusWriter, ref dnsrecord.ObjectRef) error {
	obj, ki, ok := w.get(ref)
	d, isDE := obj.(*source.DNSEndpoint)
	if !ok || !isDE || !w.cfg.SelectsDNSEndpoint(d) {
		return nil
	}
	// While the CRD prunes the conditions, a patch of them would change nothing, however often
	// the names are reported: they are sent again with a new generation, or once a minute to
	// see whether the CRD was given them.
	conditions := w.opts.Conditions &&
		(!sw.pruned || d.Status.ObservedGeneration != d.Generation || time.Since(sw.prunedAt) >= prunedRetry)
	status := map[string]any{"observedGeneration": d.Generation}
	body := map[string]any{"status": status}
	if conditions {
		want := w.wantStatus(ref, d, sw.reportedOn(ref, d.Generation))
		if equality.Semantic.DeepEqual(want, d.Status) {
			return nil
		}
		status["endpoints"], status["conditions"] = want.Endpoints, want.Conditions
		body["metadata"] = map[string]any{"resourceVersion": d.ResourceVersion}
	} else if d.Status.ObservedGeneration == d.Generation {
		return nil
	}
	patch, err := json.Marshal(body)
	if err != nil {
		return err
	}
	gvr := source.DNSEndpointGVR
	gvr.Version = ki.version
	rctx, cancel := context.WithTimeout(ctx, statusRequestTimeout)
	defer cancel()
	u, err := w.dyn.Resource(gvr).Namespace(d.Namespace).Patch(rctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patching status: %w", err)
	}
	if conditions {
		_, kept, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		if !kept {
			sw.prunedAt = time.Now()
		}
		sw.prunedLog.Set(!kept, func(bool) {
			sw.pruned = !kept
			if sw.pruned {
				log.Warningf("The API server dropped the status conditions of DNSEndpoint %s/%s: the DNSEndpoint CRD installed has no "+
					"schema for them (external-dns v0.21's has status.observedGeneration only), so Accepted and Ready are not shown. "+
					"Add them: kubectl patch crd %s.%s --type=json --patch-file deploy/crds/dnsendpoint-status.json",
					d.Namespace, d.Name, source.DNSEndpointGVR.Resource, source.DNSEndpointGVR.Group)
			} else {
				log.Infof("The DNSEndpoint CRD keeps status conditions now: DNSEndpoints show Accepted and Ready")
			}
		})
	}
	return nil
}

// wantStatus is the status d should have: reported says whether the writer has reported on
// the names of d's generation (else Ready is left as it is).
func (w *Watcher) wantStatus(ref dnsrecord.ObjectRef, d *source.DNSEndpoint, reported bool) source.DNSEndpointStatus {
	claims, rejected := w.cfg.DNSEndpointClaims(d)
	taken := int32(len(claims))
	st := source.DNSEndpointStatus{ObservedGeneration: d.Generation, Endpoints: &taken, Conditions: slices.Clone(d.Status.Conditions)}
	meta.SetStatusCondition(&st.Conditions, acceptedOf(d.Generation, len(claims), rejected))
	switch {
	case len(claims) == 0 && len(rejected) == 0:
		meta.RemoveStatusCondition(&st.Conditions, ConditionReady) // nothing asked, nothing to be ready
	case len(claims) == 0:
		meta.SetStatusCondition(&st.Conditions, unpublishableOf(d.Generation, rejected))
	case reported:
		var names []string
		for _, c := range claims {
			names = append(names, c.Name)
		}
		names = slices.Compact(names) // claims are sorted by name
		if c, ok := readyOf(d.Generation, w.outcomes(ref, names), w.published.object(ref).rev); ok {
			meta.SetStatusCondition(&st.Conditions, c)
		}
	}
	return st
}

// filteredCause: a rejection by the filters, not of an entry that was not understood.
func filteredCause(c source.Cause) bool {
	return c == source.CauseDomainFilter || c == source.CauseBaseDomain
}

func rejectionText(r source.Rejection) string {
	if r.Hostname == "" {
		return r.Reason
	}
	return r.Hostname + ": " + r.Reason
}

// acceptedOf is Accepted for a DNSEndpoint that yields accepted claims and rejected.
func acceptedOf(gen int64, accepted int, rejected []source.Rejection) metav1.Condition {
	var invalid []string
	for _, r := range rejected {
		if !filteredCause(r.Cause) {
			invalid = append(invalid, rejectionText(r))
		}
	}
	if len(invalid) > 0 {
		return metav1.Condition{Type: ConditionAccepted, Status: metav1.ConditionFalse, Reason: ReasonInvalid,
			Message: conditionMessage(strings.Join(invalid, "; ")), ObservedGeneration: gen}
	}
	return metav1.Condition{Type: ConditionAccepted, Status: metav1.ConditionTrue, Reason: ReasonAccepted,
		Message: fmt.Sprintf("%d endpoint(s) accepted", accepted), ObservedGeneration: gen}
}

// unpublishableOf is Ready for a DNSEndpoint every entry of which was rejected.
func unpublishableOf(gen int64, rejected []source.Rejection) metav1.Condition {
	reason, why := ReasonFiltered, "every endpoint in spec is outside the domain filter"
	if slices.ContainsFunc(rejected, func(r source.Rejection) bool { return !filteredCause(r.Cause) }) {
		reason, why = ReasonInvalid, "every endpoint in spec was rejected"
	}
	return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: reason,
		Message: "No endpoint published: " + why, ObservedGeneration: gen}
}

// outcome is what became of one name an object asks for.
type outcome uint8

const (
	outcomePending   outcome = iota // not reported since the object asked for it
	outcomePublished                // held in etcd for the object
	outcomeFailed                   // the store refused it, or could not be reached for it
	outcomeFiltered                 // withheld (filter, policy, another owner), or another object's claim won it
)

// nameOutcome is one name's outcome and what the writer said of it.
type nameOutcome struct {
	name   string
	is     outcome
	detail string
}

// outcomes are the outcomes of the names ref asks for, from the writer's last reports.
func (w *Watcher) outcomes(ref dnsrecord.ObjectRef, names []string) []nameOutcome {
	out := make([]nameOutcome, 0, len(names))
	for _, n := range names {
		o := nameOutcome{name: n}
		r, reported := w.published.name(n)
		switch {
		case !reported:
		case r.failed != "":
			o.is, o.detail = outcomeFailed, r.failed
		case !slices.Contains(w.desired.Sources(n), ref):
			o.is, o.detail = outcomeFiltered, "another object's records hold the name (see the Warning Events)"
		case !r.seen || !slices.Contains(r.sources, ref):
		case r.held:
			o.is = outcomePublished
		default:
			o.is, o.detail = outcomeFiltered, r.withheld
		}
		out = append(out, o)
	}
	return out
}

// readyOf is Ready for a DNSEndpoint whose names came to outcomes, published at rev;
// ok is false while a name waits for the writer (Ready is left as it is until it reports).
func readyOf(gen int64, outcomes []nameOutcome, rev int64) (c metav1.Condition, ok bool) {
	var published int
	var failed, filtered []string
	for _, o := range outcomes {
		switch o.is {
		case outcomePending:
			return metav1.Condition{}, false
		case outcomePublished:
			published++
		case outcomeFailed:
			failed = append(failed, o.name+": "+o.detail)
		case outcomeFiltered:
			filtered = append(filtered, strings.TrimSuffix(o.name+": "+o.detail, ": "))
		}
	}
	c = metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: gen}
	switch {
	case len(failed) > 0:
		c.Reason, c.Message = ReasonFailed, "Not published: "+strings.Join(failed, "; ")
	case published == 0:
		c.Reason, c.Message = ReasonFiltered, "No endpoint published: "+strings.Join(filtered, "; ")
	default:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonProgrammed
		c.Message = fmt.Sprintf("%d name(s) published in etcd at revision %d", published, rev)
		if len(filtered) > 0 {
			c.Message += "; not published: " + strings.Join(filtered, "; ")
		}
	}
	c.Message = conditionMessage(c.Message)
	return c, true
}

// conditionMessage cuts msg to the API's bound, on a rune boundary.
func conditionMessage(msg string) string {
	if len(msg) <= maxConditionMessage {
		return msg
	}
	return strings.ToValidUTF8(msg[:maxConditionMessage-3], "") + "..."
}
