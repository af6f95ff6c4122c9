// The publish role's options in the Corefile stanza.

package gatewaydns

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/txtregistry"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// sourceKinds maps external-dns's --source names to the kinds they read. Without a sources
// option every kind is read except service and crd (DNSEndpoint), the opt-in kinds
// (kubesource): they are read only when named.
var sourceKinds = map[string]string{
	"crd":               source.KindDNSEndpoint,
	"gateway-httproute": source.KindHTTPRoute,
	"gateway-grpcroute": source.KindGRPCRoute,
	"gateway-tlsroute":  source.KindTLSRoute,
	"gateway-tcproute":  source.KindTCPRoute,
	"gateway-udproute":  source.KindUDPRoute,
	"ingress":           source.KindIngress,
	"service":           source.KindService,
}

// serviceTypes are the values of service-types, spelled as in spec.type.
var serviceTypes = []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort,
	corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName}

// parsePublishOption reads one option of the publish role; ok is false for an option that is
// not one of them.
func parsePublishOption(opt string, args []string, pc *publishConfig) (ok bool, err error) {
	one := func() (string, error) {
		if len(args) != 1 {
			return "", fmt.Errorf("%s needs exactly one argument", opt)
		}
		return args[0], nil
	}
	some := func() ([]string, error) {
		if len(args) == 0 {
			return nil, fmt.Errorf("%s needs at least one argument", opt)
		}
		return args, nil
	}
	switch opt {
	case "owner":
		pc.owner, err = one()
		if err == nil && strings.ContainsAny(pc.owner, "/\"\\ ") {
			err = fmt.Errorf("owner %q may not contain '/', quotes, backslashes or spaces", pc.owner)
		}
	case "policy":
		var v string
		if v, err = one(); err == nil {
			pc.policy, err = plan.ParsePolicy(v)
		}
	case "conflict":
		var v string
		if v, err = one(); err == nil {
			pc.conflicts, err = plan.ParseConflictMode(v)
		}
	case "lease":
		var v string
		if v, err = one(); err == nil {
			if pc.lease, err = time.ParseDuration(v); err == nil {
				err = writer.CheckLease(pc.lease, writer.DefaultElectionTTL)
			}
		}
	case "dry-run":
		if len(args) != 0 {
			return true, errors.New("dry-run takes no arguments")
		}
		pc.dryRun = true
	case "kubeconfig":
		if len(args) < 1 || len(args) > 2 {
			return true, errors.New("kubeconfig needs a file and optionally a context")
		}
		pc.kubeconfig = args[0]
		if len(args) == 2 {
			pc.kubecontext = args[1]
		}
	case "sources":
		var names []string
		if names, err = some(); err == nil {
			for _, n := range names {
				kind, known := sourceKinds[n]
				if !known {
					return true, fmt.Errorf("unknown source %q, want some of %s", n, strings.Join(slices.Sorted(maps.Keys(sourceKinds)), ", "))
				}
				pc.kinds = append(pc.kinds, kind)
			}
		}
	case "domain-filter":
		pc.domainFilter, err = some()
	case "exclude-domains":
		pc.excludeDomains, err = some()
	case "namespaces":
		pc.source.Namespaces, err = some()
	case "label-filter", "annotation-filter", "gateway-label-filter":
		// A selector may hold spaces ("expose in (yes,true)"): its words are joined again, and
		// parsed as external-dns parses its --label-filter, --annotation-filter and
		// --gateway-label-filter.
		var words []string
		if words, err = some(); err == nil {
			v := strings.Join(words, " ")
			sel, perr := labels.Parse(v)
			if perr != nil {
				return true, fmt.Errorf("%s %q: %w", opt, v, perr)
			}
			switch opt {
			case "label-filter":
				pc.source.LabelSelector = sel
			case "annotation-filter":
				pc.source.AnnotationFilter = sel
			default:
				pc.source.GatewayLabelSelector = sel
			}
		}
	case "gateway-classes":
		pc.source.GatewayClasses, err = some()
	case "gateway-name":
		pc.source.GatewayName, err = one()
	case "gateway-namespace":
		pc.source.GatewayNamespace, err = one()
	case "ingress-classes":
		pc.source.IngressClasses, err = some()
	case "service-types":
		var types []string
		if types, err = some(); err == nil {
			for _, t := range types {
				st := corev1.ServiceType(t)
				if !slices.Contains(serviceTypes, st) {
					return true, fmt.Errorf("unknown service type %q, want some of %v", t, serviceTypes)
				}
				pc.source.ServiceTypes = append(pc.source.ServiceTypes, st)
			}
		}
	case "publish-internal-services":
		if len(args) != 0 {
			return true, errors.New("publish-internal-services takes no arguments")
		}
		pc.source.PublishInternal = true
	case "controller":
		pc.source.ControllerName, err = one()
	case "ttl":
		var v string
		if v, err = one(); err == nil {
			var ttl uint32
			if ttl, err = parseTTL(v); err == nil && ttl == 0 {
				err = errors.New("ttl must be at least 1s")
			}
			pc.source.DefaultTTL = ttl
		}
	case "txt-owner-id", "txt-prefix", "txt-suffix", "txt-wildcard-replacement":
		var v string
		if v, err = one(); err == nil {
			if pc.registry == nil {
				pc.registry = &txtregistry.Config{}
			}
			switch opt {
			case "txt-owner-id":
				pc.registry.Owner = v
			case "txt-prefix":
				pc.registry.Prefix = v
			case "txt-suffix":
				pc.registry.Suffix = v
			case "txt-wildcard-replacement":
				pc.registry.WildcardReplacement = v
			}
		}
	case "annotation-prefix":
		var prefixes []string
		if prefixes, err = some(); err == nil {
			for _, p := range prefixes {
				if err = checkAnnotationPrefix(p); err != nil {
					return true, err
				}
			}
			pc.source.AnnotationPrefixes = prefixes
		}
	case "base-domain-from-gateway":
		if len(args) != 0 {
			return true, errors.New("base-domain-from-gateway takes no arguments")
		}
		pc.source.BaseDomainFromGateway = true
	default:
		return false, nil
	}
	return true, err
}

// checkAnnotationPrefix accepts an annotation key prefix as external-dns's --annotation-prefix
// takes it: a DNS subdomain followed by '/', so that prefix+"hostname" is a valid annotation key.
func checkAnnotationPrefix(p string) error {
	domain, ok := strings.CutSuffix(p, "/")
	if !ok {
		return fmt.Errorf("annotation-prefix %q must end with '/', as in %s", p, source.AnnotationPrefix)
	}
	if errs := validation.IsDNS1123Subdomain(domain); len(errs) > 0 {
		return fmt.Errorf("annotation-prefix %q: %s is not a DNS subdomain: %s", p, domain, strings.Join(errs, "; "))
	}
	return nil
}
