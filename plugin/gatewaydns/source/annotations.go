package source

import (
	"fmt"
	"math"
	"strings"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/option"
)

// Annotation prefixes read for the external-dns annotations. Both are read by default so that
// objects written for either generation of external-dns keep working (external-dns v0.22.0
// moved its default from the legacy prefix to AnnotationPrefix); when an object carries the
// same annotation under both, AnnotationPrefix wins. Config.AnnotationPrefixes replaces them,
// as external-dns's --annotation-prefix does.
const (
	AnnotationPrefix       = "external-dns.kubernetes.io/"
	LegacyAnnotationPrefix = "external-dns.alpha.kubernetes.io/"
)

// DefaultAnnotationPrefixes are the prefixes read when Config.AnnotationPrefixes is empty, the
// first winning.
var DefaultAnnotationPrefixes = []string{AnnotationPrefix, LegacyAnnotationPrefix}

// Annotation names (after the prefix) and other well-known annotation keys.
const (
	HostnameAnnotation   = "hostname"   // comma list of extra hostnames
	TargetAnnotation     = "target"     // comma list of targets that override the status
	TTLAnnotation        = "ttl"        // seconds or a Go duration, 1..2147483647 s
	ControllerAnnotation = "controller" // absent or naming this controller

	// GatewayHostnameSourceAnnotation on a route and IngressHostnameSourceAnnotation on an
	// Ingress pick where its names come from (see HostnameSource).
	GatewayHostnameSourceAnnotation = "gateway-hostname-source"
	IngressHostnameSourceAnnotation = "ingress-hostname-source"

	// BaseDomainAnnotation on a Gateway marks the domain that routes attached to it may
	// publish in (set by the openMCP gateway service), see Config.BaseDomainFromGateway.
	BaseDomainAnnotation = "dns.openmcp.cloud/base-domain"
	// IngressClassAnnotation is the legacy IngressClass annotation, used when
	// spec.ingressClassName is not set.
	IngressClassAnnotation = "kubernetes.io/ingress.class"
)

// MaxTTL is the largest TTL accepted from an annotation (RFC 2181: 2^31-1).
const MaxTTL = math.MaxInt32

// Prefixes returns the annotation prefixes read, the first winning.
func (c *Config) Prefixes() []string {
	if len(c.AnnotationPrefixes) > 0 {
		return c.AnnotationPrefixes
	}
	return DefaultAnnotationPrefixes
}

// annotation returns the external-dns annotation name under the first prefix that holds it,
// and the full key that held it.
func (c *Config) annotation(annots map[string]string, name string) (value, key string, ok bool) {
	for _, prefix := range c.Prefixes() {
		if v, found := annots[prefix+name]; found {
			return v, prefix + name, true
		}
	}
	return "", "", false
}

// splitList splits a comma list, trims blanks around each item and drops empty items.
func splitList(v string) []string {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// parseTTL reads the ttl annotation: the Corefile's TTL syntax (option.TTL), blanks around it
// ignored, in 1..MaxTTL.
func parseTTL(v string) (uint32, error) {
	return option.TTL(strings.TrimSpace(v), 1, MaxTTL)
}

// ttlFor returns the TTL an object asks for through its ttl annotation, or the default TTL. An invalid
// annotation is reported and def is used.
func (c *Config) ttlFor(annots map[string]string, rs *rejections) uint32 {
	def := c.DefaultTTL
	v, key, ok := c.annotation(annots, TTLAnnotation)
	if !ok {
		return def
	}
	ttl, err := parseTTL(v)
	if err != nil {
		rs.add("", CauseInvalidTTL, fmt.Sprintf("annotation %s: %v; using the default TTL", key, err))
		return def
	}
	return ttl
}

// annotatedTargets returns the usable targets of the target annotation, which overrides the
// addresses of a Gateway, Ingress or Service; overridden is false when the annotation is absent
// or empty. Unusable entries are reported and left out.
func (c *Config) annotatedTargets(annots map[string]string, rs *rejections) (map[string]struct{}, bool) {
	v, key, ok := c.annotation(annots, TargetAnnotation)
	if !ok || len(splitList(v)) == 0 {
		return nil, false
	}
	set := map[string]struct{}{}
	for _, t := range splitList(v) {
		n, _, err := normalizeTarget(t)
		if err != nil {
			rs.add("", CauseInvalidTarget, fmt.Sprintf("annotation %s: %v", key, err))
			continue
		}
		set[n] = struct{}{}
	}
	return set, true
}

// Values of the gateway-hostname-source and ingress-hostname-source annotations.
const (
	HostnameSourceAnnotationOnly   = "annotation-only"    // the hostname annotation alone
	HostnameSourceDefinedHostsOnly = "defined-hosts-only" // the object's spec alone
)

// hostnameSources reads a hostname-source annotation (name: GatewayHostnameSourceAnnotation or
// IngressHostnameSourceAnnotation; its value is case-insensitive, as in external-dns): whether
// the names in the object's spec and those of its hostname annotation are published. Absent:
// both. For a value that is neither, bad holds the reason to report, and spec and annotated
// are both true: the caller decides what an invalid value means for its kind.
func (c *Config) hostnameSources(annots map[string]string, name string) (spec, annotated bool, bad string) {
	v, key, found := c.annotation(annots, name)
	if !found {
		return true, true, ""
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case HostnameSourceAnnotationOnly:
		return false, true, ""
	case HostnameSourceDefinedHostsOnly:
		return true, false, ""
	}
	return true, true, fmt.Sprintf("annotation %s: %q is neither %s nor %s",
		key, v, HostnameSourceAnnotationOnly, HostnameSourceDefinedHostsOnly)
}
