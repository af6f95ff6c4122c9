package source

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Steering (shared/spec/steering.md): each cluster declares, where it publishes a name, its
// share of the name's answers, its failover tier and the health check of its addresses. The
// sources read it into Claim.Policy; the writer carries it in the values of the name (record.Steering).
//
// Where it is read, the first that holds a field winning, field by field:
//
//   - a route: its own annotations, then those of the Gateway it comes through (a Gateway's
//     annotations are the cluster's default for every name through it; a route that asks for
//     a name decides for it, as external-dns reads a route's ttl annotation);
//   - an Ingress, a Service: their own annotations;
//   - a DNSEndpoint entry: its providerSpecific properties, its labels, then the annotations
//     of the DNSEndpoint.
//
// In each place gatewaydns.io/weight, /priority and /health-check win over the Route 53 forms
// of external-dns, which are read for a migration when a set identifier is there too (Route
// 53 takes a weight or a failover role only on a record with one): the annotations
// set-identifier with aws-weight (the weight) and aws-failover (PRIMARY is priority 0,
// SECONDARY 1) under the external-dns prefixes, or a DNSEndpoint entry's setIdentifier with
// its aws/weight and aws/failover properties. The set identifier itself is not kept: the
// owner id names a cluster's records.
//
// An invalid value is reported on its object (InvalidAnnotation) and voids what that object
// (or entry) says of steering, never its names: they are published without its policy (where
// a Gateway, or a DNSEndpoint's annotations, say something, that still applies).

// Steering annotations and the DNSEndpoint properties and labels of the same names.
const (
	SteeringPrefix        = "gatewaydns.io/"
	WeightAnnotation      = SteeringPrefix + "weight"
	PriorityAnnotation    = SteeringPrefix + "priority"
	HealthCheckAnnotation = SteeringPrefix + "health-check"
)

// external-dns's Route 53 routing annotations (after its prefixes) and DNSEndpoint properties.
const (
	SetIdentifierAnnotation = "set-identifier"
	AWSWeightAnnotation     = "aws-weight"
	AWSFailoverAnnotation   = "aws-failover"
	AWSWeightProperty       = "aws/weight"
	AWSFailoverProperty     = "aws/failover"
)

// SteeringProperty reports whether a DNSEndpoint providerSpecific property or label is one the
// steering reads: what a slim DNSEndpoint keeps of them.
func SteeringProperty(name string) bool {
	return strings.HasPrefix(name, SteeringPrefix) || name == AWSWeightProperty || name == AWSFailoverProperty
}

// Policy is what an object declares of steering for a name, field by field: a field it does
// not set is left to another place (a Gateway, another object publishing the name).
type Policy struct {
	Weight      int // 0..record.MaxWeight, when HasWeight
	HasWeight   bool
	Priority    int // 0..record.MaxPriority, when HasPriority
	HasPriority bool
	HealthCheck string // canonical (record.HealthCheck.String); "" for none
}

// IsZero reports whether p sets nothing.
func (p Policy) IsZero() bool { return p == Policy{} }

// over is p, with the fields it does not set taken from base.
func (p Policy) over(base Policy) Policy {
	if !p.HasWeight {
		p.Weight, p.HasWeight = base.Weight, base.HasWeight
	}
	if !p.HasPriority {
		p.Priority, p.HasPriority = base.Priority, base.HasPriority
	}
	if p.HealthCheck == "" {
		p.HealthCheck = base.HealthCheck
	}
	return p
}

// Steering is the policy as the name's values carry it.
func (p Policy) Steering() record.Steering {
	return record.Steering{Weight: p.Weight, Weighted: p.HasWeight, Priority: p.Priority, HealthCheck: p.HealthCheck}
}

// String is the policy in words, for Events and logs: "weight 90, priority 1, health check
// tcp://:443", or "no steering policy".
func (p Policy) String() string {
	var parts []string
	if p.HasWeight {
		parts = append(parts, "weight "+strconv.Itoa(p.Weight))
	}
	if p.HasPriority {
		parts = append(parts, "priority "+strconv.Itoa(p.Priority))
	}
	if p.HealthCheck != "" {
		parts = append(parts, "health check "+p.HealthCheck)
	}
	if len(parts) == 0 {
		return "no steering policy"
	}
	return strings.Join(parts, ", ")
}

// field is one value read for a policy field, and the key it was read under (for messages).
type field struct {
	value, key string
	ok         bool
}

// policyFields are the values one place holds for each field.
type policyFields struct {
	weight, priority, check               field
	setIdentifier, awsWeight, awsFailover field
}

// or is f, or g when f was not found.
func (f field) or(g field) field {
	if f.ok {
		return f
	}
	return g
}

// parse reads the fields; every invalid one is in the error.
func (f policyFields) parse() (Policy, error) {
	var p Policy
	var errs []error
	weight, priority, failover := f.weight, f.priority, false
	if f.setIdentifier.ok {
		weight = weight.or(f.awsWeight)
		if !priority.ok && f.awsFailover.ok {
			priority, failover = f.awsFailover, true
		}
	}
	if weight.ok {
		n, err := boundedInt(weight, record.MaxWeight)
		p.Weight, p.HasWeight = n, err == nil
		errs = append(errs, err)
	}
	switch {
	case failover:
		switch strings.ToUpper(strings.TrimSpace(priority.value)) {
		case "PRIMARY":
			p.Priority, p.HasPriority = 0, true
		case "SECONDARY":
			p.Priority, p.HasPriority = 1, true
		default:
			errs = append(errs, fmt.Errorf("%s: %q is neither PRIMARY nor SECONDARY", priority.key, priority.value))
		}
	case priority.ok:
		n, err := boundedInt(priority, record.MaxPriority)
		p.Priority, p.HasPriority = n, err == nil
		errs = append(errs, err)
	}
	if f.check.ok {
		hc, err := record.ParseHealthCheck(f.check.value)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.check.key, err))
		} else {
			p.HealthCheck = hc.String()
		}
	}
	return p, errors.Join(errs...)
}

// boundedInt reads a whole number 0..max.
func boundedInt(f field, max int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(f.value))
	if err != nil || n < 0 || n > max {
		return 0, fmt.Errorf("%s: %q is not a whole number 0..%d", f.key, f.value, max)
	}
	return n, nil
}

// annotationPolicy reads the steering annotations of an object; on an invalid one the policy
// is empty and the error says what is wrong.
func (c *Config) annotationPolicy(annots map[string]string) (Policy, error) {
	own := func(key string) field {
		v, ok := annots[key]
		return field{value: v, key: "annotation " + key, ok: ok}
	}
	edns := func(name string) field {
		v, key, ok := c.annotation(annots, name)
		return field{value: v, key: "annotation " + key, ok: ok}
	}
	p, err := policyFields{
		weight: own(WeightAnnotation), priority: own(PriorityAnnotation), check: own(HealthCheckAnnotation),
		setIdentifier: edns(SetIdentifierAnnotation), awsWeight: edns(AWSWeightAnnotation), awsFailover: edns(AWSFailoverAnnotation),
	}.parse()
	if err != nil {
		return Policy{}, err
	}
	return p, nil
}

// objectPolicy is annotationPolicy, reporting an invalid annotation on the object; fallback
// says what its names are published with then.
func (c *Config) objectPolicy(annots map[string]string, rs *rejections, fallback string) Policy {
	p, err := c.annotationPolicy(annots)
	if err != nil {
		rs.add("", CauseInvalidAnnotation, steeringRefused(err, fallback))
	}
	return p
}

// steeringRefused is the reason of an invalid steering value.
func steeringRefused(err error, fallback string) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ") + "; publishing without this steering policy" + fallback
}

// gatewayPolicy is the steering the annotations of gw give the names through it; an invalid
// annotation is reported on the Gateway (GatewayRejections), and gives none.
func (c *Config) gatewayPolicy(gw *gatewayv1.Gateway) Policy {
	p, _ := c.annotationPolicy(gw.Annotations)
	return p
}

// steerTargets gives the claims that have targets the policy p: TXT, SRV and MX records are
// not steered.
func steerTargets(claims []Claim, p Policy) {
	for i := range claims {
		if len(claims[i].Targets) > 0 {
			claims[i].Policy = p
		}
	}
}

// dnsEndpointPolicy is the policy of one DNSEndpoint entry: its providerSpecific properties,
// then its labels (the DNSEndpoint's annotations are laid under it by the caller). An invalid
// value is reported, naming the entry (where), and voids the entry's own policy. Only
// addresses and CNAMEs are steered: an entry of other records that asks for a policy is told so.
func dnsEndpointPolicy(e DNSEndpointEntry, where, name string, targets bool, rs *rejections) Policy {
	prop := func(n string) field {
		for _, p := range e.ProviderSpecific {
			if p.Name == n {
				return field{value: p.Value, key: where + " providerSpecific " + n, ok: true}
			}
		}
		return field{}
	}
	label := func(n string) field {
		v, ok := e.Labels[n]
		return field{value: v, key: where + " label " + n, ok: ok}
	}
	f := policyFields{
		weight:        prop(WeightAnnotation).or(label(WeightAnnotation)),
		priority:      prop(PriorityAnnotation).or(label(PriorityAnnotation)),
		check:         prop(HealthCheckAnnotation).or(label(HealthCheckAnnotation)),
		setIdentifier: field{value: e.SetIdentifier, key: where + " setIdentifier", ok: e.SetIdentifier != ""},
		awsWeight:     prop(AWSWeightProperty),
		awsFailover:   prop(AWSFailoverProperty),
	}
	own, err := f.parse()
	asked := f.weight.ok || f.priority.ok || f.check.ok || f.setIdentifier.ok && (f.awsWeight.ok || f.awsFailover.ok)
	switch {
	case err != nil:
		rs.add(name, CauseInvalidAnnotation, steeringRefused(err, " (the DNSEndpoint's steering annotations still apply)"))
		return Policy{}
	case asked && !targets:
		rs.add(name, CauseInvalidAnnotation, where+": only A, AAAA and CNAME records are steered; the entry's steering policy is ignored")
		return Policy{}
	}
	return own
}
