// Package source maps Kubernetes objects (Gateway API routes, Gateways, Ingresses and Services) to the DNS
// endpoints the publish path wants. Everything here is a pure function of the objects it is
// given: no informers, no I/O and no etcd client. An informer-driven caller computes the Claims
// of one object with RouteClaims or IngressClaims, stores them in a Desired under the object's
// ObjectRef, and reads back the merged record.Endpoints of the names that changed.
package source

import (
	"cmp"
	"slices"
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Object kinds, as they appear in record.ObjectRef.Kind.
const (
	KindGateway   = "Gateway"
	KindHTTPRoute = "HTTPRoute"
	KindGRPCRoute = "GRPCRoute"
	KindTLSRoute  = "TLSRoute"
	KindTCPRoute  = "TCPRoute"
	KindUDPRoute  = "UDPRoute"
	KindIngress   = "Ingress"
	KindService   = "Service"
)

// Claim is one object's wish for one DNS name. An object yields at most one Claim per name.
type Claim struct {
	// Name is lower-cased, without the trailing dot; it may start with "*.".
	Name string
	// Targets are sorted and unique: IP addresses and/or host names. Merge decides what a
	// mix of them becomes.
	Targets []string
	// Records are TXT, SRV and MX records (record.SortTyped form); only a DNSEndpoint asks
	// for them. Merge unions them per name; a CNAME cannot share its name with them.
	Records []record.Typed
	// TTL in seconds; 0 means the plugin default.
	TTL uint32
	// Source is the object that asked for the name.
	Source record.ObjectRef
	// Created is the creationTimestamp of Source: the oldest object's CNAME wins a conflict.
	Created time.Time
	// Policy is the steering the object declares for the name (steering.go); zero for none.
	// Only a claim with targets carries one. Of the objects of one cluster that publish a
	// name, the oldest that sets a field decides it (steering_merge.go).
	Policy Policy
}

// Cause classifies a Rejection with a small, fixed set of values (usable as a metric label).
type Cause string

const (
	// CauseInvalidHostname: a hostname is an IP literal or not a DNS-1123 name.
	CauseInvalidHostname Cause = "InvalidHostname"
	// CauseInvalidTarget: a target (annotation or status address) is unusable.
	CauseInvalidTarget Cause = "InvalidTarget"
	// CauseInvalidTTL: the ttl annotation is not a number of seconds or a duration in range.
	CauseInvalidTTL Cause = "InvalidTTL"
	// CauseInvalidAnnotation: an annotation that picks a behaviour (gateway-hostname-source,
	// ingress-hostname-source) holds a value that names none.
	CauseInvalidAnnotation Cause = "InvalidAnnotation"
	// CauseDomainFilter: the name is outside the configured domain filter or excluded.
	CauseDomainFilter Cause = "DomainFilter"
	// CauseBaseDomain: the name is outside the base domain of the Gateway it comes through.
	CauseBaseDomain Cause = "BaseDomain"
	// CauseParentNotAccepted: no status.parents entry for the parentRef has Accepted=True.
	CauseParentNotAccepted Cause = "ParentNotAccepted"
	// CauseParentNotFound: the parent Gateway does not exist (or is not known yet).
	CauseParentNotFound Cause = "ParentNotFound"
	// CauseNoMatchingListener: no listener of the parent Gateway accepts the route.
	CauseNoMatchingListener Cause = "NoMatchingListener"
	// CauseNoMatchingHostname: a hostname intersects no listener hostname, or neither the
	// route nor its listeners have a hostname.
	CauseNoMatchingHostname Cause = "NoMatchingHostname"
	// CauseNoTargets: the Gateway or Ingress has no address to publish yet.
	CauseNoTargets Cause = "NoTargets"
	// CauseNotProgrammed: the Gateway's Programmed condition is False: its names are withdrawn
	// from this cluster until it is Programmed again.
	CauseNotProgrammed Cause = "NotProgrammed"
	// CauseConflict: the name's records conflict with another claim (CNAME rules), or another
	// owner holds the name in exclusive mode.
	CauseConflict Cause = "Conflict"
	// CausePublishFailed: the store refused the name's records, e.g. etcd permission denied for
	// a name outside the cluster's key prefix.
	CausePublishFailed Cause = "PublishFailed"
)

// Causes are every Cause, so that a metric labelled with them can exist at zero for each
// before the first rejection (TestCausesNameEveryCause keeps the list whole).
var Causes = []Cause{CauseInvalidHostname, CauseInvalidTarget, CauseInvalidTTL, CauseInvalidAnnotation, CauseDomainFilter,
	CauseBaseDomain, CauseParentNotAccepted, CauseParentNotFound, CauseNoMatchingListener,
	CauseNoMatchingHostname, CauseNoTargets, CauseNotProgrammed, CauseConflict, CausePublishFailed,
	CauseUnsupportedRecordType}

// Rejection reports a hostname (or a whole object or parent, when Hostname is empty) that
// will not be published as asked, on the object that asked for it.
type Rejection struct {
	Object   record.ObjectRef
	Hostname string
	Cause    Cause
	Reason   string
}

func (r Rejection) String() string {
	s := r.Object.String() + ": "
	if r.Hostname != "" {
		s += r.Hostname + ": "
	}
	return s + r.Reason
}

// compareRefs orders ObjectRefs by kind, namespace and name.
func compareRefs(a, b record.ObjectRef) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

func compareRejections(a, b Rejection) int {
	return cmp.Or(compareRefs(a.Object, b.Object), cmp.Compare(a.Hostname, b.Hostname),
		cmp.Compare(a.Cause, b.Cause), cmp.Compare(a.Reason, b.Reason))
}

// rejections collects Rejections for one object, without duplicates.
type rejections struct {
	ref  record.ObjectRef
	seen map[Rejection]struct{}
	list []Rejection
	// named: the object names valid hostnames; ours: one of them is meant for this DNS
	// (Config.Zones). An object that names hostnames, none of them ours, is another DNS
	// controller's (an Ingress for external-dns's public zone, say): it gets no Events.
	named, ours bool
}

// names records that the object names hostname n, and whether n is meant for this DNS.
func (rs *rejections) names(ours bool) {
	rs.named = true
	rs.ours = rs.ours || ours
}

func newRejections(ref record.ObjectRef) *rejections {
	return &rejections{ref: ref}
}

func (rs *rejections) add(hostname string, cause Cause, reason string) {
	r := Rejection{Object: rs.ref, Hostname: hostname, Cause: cause, Reason: reason}
	if rs.seen == nil {
		rs.seen = map[Rejection]struct{}{}
	}
	if _, dup := rs.seen[r]; dup {
		return
	}
	rs.seen[r] = struct{}{}
	rs.list = append(rs.list, r)
}

// sorted returns the collected Rejections in a deterministic order (nil when there are none).
// For another controller's object only invalid hostnames are kept: a typo may hide a name
// meant for this zone.
func (rs *rejections) sorted() []Rejection {
	if rs.named && !rs.ours {
		rs.list = slices.DeleteFunc(rs.list, func(r Rejection) bool { return r.Cause != CauseInvalidHostname })
	}
	if len(rs.list) == 0 {
		return nil
	}
	slices.SortFunc(rs.list, compareRejections)
	return rs.list
}
