package source

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Annotation prefixes read for the external-dns annotations. Both are read so that objects
// written for either generation of external-dns keep working; when an object carries the same
// annotation under both, AnnotationPrefix wins.
const (
	AnnotationPrefix       = "external-dns.kubernetes.io/"
	LegacyAnnotationPrefix = "external-dns.alpha.kubernetes.io/"
)

// Annotation names (after the prefix) and other well-known annotation keys.
const (
	HostnameAnnotation   = "hostname"   // comma list of extra hostnames
	TargetAnnotation     = "target"     // comma list of targets that override the status
	TTLAnnotation        = "ttl"        // seconds or a Go duration, 1..2147483647 s
	ControllerAnnotation = "controller" // absent or naming this controller

	// BaseDomainAnnotation on a Gateway marks the domain that routes attached to it may
	// publish in (set by the openMCP gateway service), see Config.BaseDomainFromGateway.
	BaseDomainAnnotation = "dns.openmcp.cloud/base-domain"
	// IngressClassAnnotation is the legacy IngressClass annotation, used when
	// spec.ingressClassName is not set.
	IngressClassAnnotation = "kubernetes.io/ingress.class"
)

// MaxTTL is the largest TTL accepted from an annotation (RFC 2181: 2^31-1).
const MaxTTL = math.MaxInt32

// annotation returns the external-dns annotation name under either prefix, preferring
// AnnotationPrefix, and the full key that held it.
func annotation(annots map[string]string, name string) (value, key string, ok bool) {
	for _, prefix := range [...]string{AnnotationPrefix, LegacyAnnotationPrefix} {
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

// parseTTL reads a TTL given as a number of seconds ("300") or a Go duration ("5m"); a
// duration is truncated to whole seconds. The result must lie in 1..MaxTTL.
func parseTTL(v string) (uint32, error) {
	v = strings.TrimSpace(v)
	var secs int64
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		secs = n
	} else if d, derr := time.ParseDuration(v); derr == nil {
		secs = int64(d / time.Second)
	} else {
		return 0, fmt.Errorf("%q is neither a number of seconds nor a duration", v)
	}
	if secs < 1 || secs > MaxTTL {
		return 0, fmt.Errorf("%q is out of range: a TTL must be 1..%d seconds", v, MaxTTL)
	}
	return uint32(secs), nil
}

// ttlFor returns the TTL an object asks for through its ttl annotation, or def. An invalid
// annotation is reported and def is used.
func ttlFor(annots map[string]string, def uint32, rs *rejections) uint32 {
	v, key, ok := annotation(annots, TTLAnnotation)
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
func annotatedTargets(annots map[string]string, rs *rejections) (map[string]struct{}, bool) {
	v, key, ok := annotation(annots, TargetAnnotation)
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
