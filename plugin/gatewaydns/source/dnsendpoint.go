package source

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// The DNSEndpoint source: external-dns's `--source=crd`, the externaldns.k8s.io/v1alpha1
// DNSEndpoint CRD that external-dns ships, read without depending on its Go module. Each
// spec.endpoints[] entry asks for one name with records of one type: A, AAAA, CNAME, TXT, SRV
// or MX. setIdentifier, providerSpecific properties and labels are read for steering alone
// (steering.go, dnsEndpointPolicy): others are ignored, as by external-dns's crd source with a
// provider that knows no routing policies.

// KindDNSEndpoint is the kind of external-dns's DNSEndpoint CRD.
const KindDNSEndpoint = "DNSEndpoint"

// DNSEndpointGVR is the resource of DNSEndpoints.
var DNSEndpointGVR = schema.GroupVersionResource{Group: "externaldns.k8s.io", Version: "v1alpha1", Resource: "dnsendpoints"}

// CauseUnsupportedRecordType: a DNSEndpoint entry asks for a record type gatewaydns does not
// publish (NS, PTR, NAPTR, CAA, ...).
const CauseUnsupportedRecordType Cause = "UnsupportedRecordType"

// DNSEndpoint is the part of an externaldns.k8s.io/v1alpha1 DNSEndpoint that the mapping and
// the status write read, with the JSON names of the CRD.
type DNSEndpoint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              DNSEndpointSpec   `json:"spec,omitempty"`
	Status            DNSEndpointStatus `json:"status,omitempty"`
}

// DNSEndpointSpec is spec of a DNSEndpoint.
type DNSEndpointSpec struct {
	Endpoints []DNSEndpointEntry `json:"endpoints,omitempty"`
}

// DNSEndpointEntry is one spec.endpoints[] entry (external-dns's endpoint.Endpoint).
type DNSEndpointEntry struct {
	DNSName       string   `json:"dnsName,omitempty"`
	Targets       []string `json:"targets,omitempty"`
	RecordType    string   `json:"recordType,omitempty"`
	SetIdentifier string   `json:"setIdentifier,omitempty"`
	RecordTTL     int64    `json:"recordTTL,omitempty"`
	// Labels and ProviderSpecific are read for the entry's steering (steering.go).
	Labels           map[string]string          `json:"labels,omitempty"`
	ProviderSpecific []ProviderSpecificProperty `json:"providerSpecific,omitempty"`
}

// ProviderSpecificProperty is one spec.endpoints[].providerSpecific entry.
type ProviderSpecificProperty struct {
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
}

// DNSEndpointStatus is status of a DNSEndpoint: the generation read, and, with a CRD whose
// schema has them (external-dns's from its status conditions on, kubernetes-sigs/external-dns
// #6609), how many spec entries were taken and the Accepted and Ready conditions.
type DNSEndpointStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Endpoints          *int32             `json:"endpoints,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// DeepCopyObject implements runtime.Object.
func (d *DNSEndpoint) DeepCopyObject() runtime.Object {
	if d == nil {
		return nil
	}
	out := *d
	d.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.Endpoints = slices.Clone(d.Spec.Endpoints)
	for i := range out.Spec.Endpoints {
		e := &out.Spec.Endpoints[i]
		e.Targets = slices.Clone(e.Targets)
		e.Labels = maps.Clone(e.Labels)
		e.ProviderSpecific = slices.Clone(e.ProviderSpecific)
	}
	if d.Status.Endpoints != nil {
		n := *d.Status.Endpoints
		out.Status.Endpoints = &n
	}
	out.Status.Conditions = slices.Clone(d.Status.Conditions)
	return &out
}

// DNSEndpointFromUnstructured decodes a DNSEndpoint read with a dynamic client. Fields of the
// wrong type make an error; unknown fields are ignored.
func DNSEndpointFromUnstructured(u map[string]any) (*DNSEndpoint, error) {
	var d DNSEndpoint
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// DNSEndpointRef names a DNSEndpoint.
func DNSEndpointRef(d *DNSEndpoint) record.ObjectRef {
	return record.ObjectRef{Kind: KindDNSEndpoint, Namespace: d.Namespace, Name: d.Name}
}

// SelectsDNSEndpoint reports whether the namespace, label, annotation and controller filters
// select the DNSEndpoint: whether it is this controller's to map and to write status on.
func (c *Config) SelectsDNSEndpoint(d *DNSEndpoint) bool {
	return c.selects(d.Namespace, d.Labels, d.Annotations)
}

// DNSEndpointClaims maps one DNSEndpoint to the names it publishes: one claim per valid
// spec.endpoints[] entry inside the domain filter. An invalid entry (a name that is not a DNS
// name, an unsupported type, a target that does not fit the type, a CNAME with several
// targets, SRV or MX data that does not parse) is skipped whole, as external-dns skips an
// entry with an illegal target, and reported; a recordTTL out of range is reported and the
// default TTL used, as for a ttl annotation. A DNSEndpoint that the
// namespace, label, annotation and controller filters leave out yields nothing.
func (c *Config) DNSEndpointClaims(d *DNSEndpoint) ([]Claim, []Rejection) {
	if !c.SelectsDNSEndpoint(d) {
		return nil, nil
	}
	ref := DNSEndpointRef(d)
	rs := newRejections(ref)
	objPolicy := c.objectPolicy(d.Annotations, rs, " (an entry's own steering properties and labels still apply)")
	var claims []Claim
	var entries []string // where each claim comes from
	for i, e := range d.Spec.Endpoints {
		where := fmt.Sprintf("spec.endpoints[%d]", i)
		name, err := dnsEndpointName(e.DNSName)
		if err != nil {
			rs.add(strings.TrimSpace(e.DNSName), CauseInvalidHostname, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		rs.names(c.concerns(name))
		cl, cause, err := dnsEndpointClaim(e)
		if err != nil {
			rs.add(name, cause, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		ttl := c.DefaultTTL
		switch {
		case e.RecordTTL == 0:
		case e.RecordTTL < 0 || e.RecordTTL > MaxTTL:
			rs.add(name, CauseInvalidTTL, fmt.Sprintf("%s: recordTTL %d is out of range 1..%d; using the default TTL", where, e.RecordTTL, MaxTTL))
		default:
			ttl = uint32(e.RecordTTL)
		}
		if !c.DomainFilter.Match(name) {
			rs.add(name, CauseDomainFilter, "name is outside the domain filter")
			continue
		}
		cl.Name, cl.TTL, cl.Source, cl.Created = name, ttl, ref, d.CreationTimestamp.Time
		cl.Policy = dnsEndpointPolicy(e, where, name, len(cl.Targets) > 0, rs)
		claims = append(claims, cl)
		entries = append(entries, where)
	}
	order := make([]int, len(claims))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(claims[a].Name, claims[b].Name) })
	sorted, where := make([]Claim, len(claims)), make([]string, len(claims))
	for i, k := range order {
		sorted[i], where[i] = claims[k], entries[k]
	}
	agreeOnPolicy(sorted, where, objPolicy, rs)
	return sorted, rs.sorted()
}

// dnsEndpointClaim is the targets or records of one entry, or why it is skipped.
func dnsEndpointClaim(e DNSEndpointEntry) (Claim, Cause, error) {
	typ := strings.ToUpper(strings.TrimSpace(e.RecordType))
	var cl Claim
	switch typ {
	case "A", "AAAA", "CNAME", record.TypeTXT, record.TypeSRV, record.TypeMX:
	case "":
		return cl, CauseUnsupportedRecordType, fmt.Errorf("recordType is empty")
	default:
		return cl, CauseUnsupportedRecordType, fmt.Errorf("record type %q is not published (A, AAAA, CNAME, TXT, SRV and MX are)", e.RecordType)
	}
	if len(e.Targets) == 0 {
		return cl, CauseNoTargets, fmt.Errorf("%s record without targets", typ)
	}
	if typ == "CNAME" && len(e.Targets) > 1 {
		return cl, CauseInvalidTarget, fmt.Errorf("a CNAME has one target, not %d", len(e.Targets))
	}
	for _, t := range e.Targets {
		switch typ {
		case "A", "AAAA", "CNAME":
			n, isIP, err := normalizeTarget(t)
			if err != nil {
				return Claim{}, CauseInvalidTarget, err
			}
			if want := typ != "CNAME"; isIP != want {
				return Claim{}, CauseInvalidTarget, fmt.Errorf("target %q is not %s", t, targetKind(typ))
			}
			if isIP && (netip.MustParseAddr(n).Is4() != (typ == "A")) {
				return Claim{}, CauseInvalidTarget, fmt.Errorf("target %q is not %s", t, targetKind(typ))
			}
			cl.Targets = append(cl.Targets, n)
		case record.TypeTXT:
			if t == "" {
				return Claim{}, CauseInvalidTarget, fmt.Errorf("TXT target is empty")
			}
			cl.Records = append(cl.Records, record.TXT(t))
		case record.TypeSRV:
			r, err := parseSRV(t)
			if err != nil {
				return Claim{}, CauseInvalidTarget, err
			}
			cl.Records = append(cl.Records, r)
		case record.TypeMX:
			r, err := parseMX(t)
			if err != nil {
				return Claim{}, CauseInvalidTarget, err
			}
			cl.Records = append(cl.Records, r)
		}
	}
	slices.Sort(cl.Targets)
	cl.Targets = slices.Compact(cl.Targets)
	cl.Records = record.SortTyped(cl.Records)
	return cl, "", nil
}

func targetKind(typ string) string {
	switch typ {
	case "A":
		return "an IPv4 address"
	case "AAAA":
		return "an IPv6 address"
	}
	return "a host name"
}

// dnsEndpointName checks a DNSEndpoint's dnsName: a DNS-1123 name, optionally starting with
// "*.", whose labels may also hold '_' (SRV owner names like _sip._tcp.example.com, _dmarc
// TXT names).
func dnsEndpointName(h string) (string, error) {
	n := normalizeName(h)
	if n == "" {
		return "", fmt.Errorf("dnsName is empty")
	}
	if isIPLiteral(n) {
		return "", fmt.Errorf("dnsName is an IP address, not a DNS name")
	}
	// '_' is checked as a letter would be: checkDNS1123 knows only [a-z0-9-].
	if err := checkDNS1123(strings.ReplaceAll(strings.TrimPrefix(n, "*."), "_", "x")); err != nil {
		return "", fmt.Errorf("dnsName is not a valid DNS name: %v", err)
	}
	return n, nil
}

// parseSRV reads SRV data as a DNSEndpoint target holds it: "priority weight port target".
func parseSRV(s string) (record.Typed, error) {
	f := strings.Fields(s)
	if len(f) != 4 {
		return record.Typed{}, fmt.Errorf("SRV target %q is not \"priority weight port target\"", s)
	}
	var n [3]uint16
	for i, what := range []string{"priority", "weight", "port"} {
		v, err := strconv.ParseUint(f[i], 10, 16)
		if err != nil {
			return record.Typed{}, fmt.Errorf("SRV target %q: %s %q is not a number 0..65535", s, what, f[i])
		}
		n[i] = uint16(v)
	}
	if n[2] == 0 {
		// Without a port in the value, every SkyDNS reader would take the record for a CNAME.
		return record.Typed{}, fmt.Errorf("SRV target %q: port 0 cannot be published in the SkyDNS format", s)
	}
	host, err := recordTarget(f[3])
	if err != nil {
		return record.Typed{}, fmt.Errorf("SRV target %q: %w", s, err)
	}
	return record.SRV(n[0], n[1], n[2], host), nil
}

// parseMX reads MX data as a DNSEndpoint target holds it: "preference host".
func parseMX(s string) (record.Typed, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return record.Typed{}, fmt.Errorf("MX target %q is not \"preference host\"", s)
	}
	pref, err := strconv.ParseUint(f[0], 10, 16)
	if err != nil {
		return record.Typed{}, fmt.Errorf("MX target %q: preference %q is not a number 0..65535", s, f[0])
	}
	host, err := recordTarget(f[1])
	if err != nil {
		return record.Typed{}, fmt.Errorf("MX target %q: %w", s, err)
	}
	return record.MX(uint16(pref), host), nil
}

// recordTarget checks the host of SRV or MX data: a host name, not an IP address, and not the
// null target "." (which the SkyDNS format cannot hold).
func recordTarget(h string) (string, error) {
	n, isIP, err := normalizeTarget(h)
	if err != nil {
		return "", err
	}
	if isIP {
		return "", fmt.Errorf("target %q is an IP address, not a host name", h)
	}
	return n, nil
}
