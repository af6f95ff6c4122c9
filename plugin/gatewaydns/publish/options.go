// The publish role's options in the Corefile stanza.

package publish

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/option"
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

// Parse reads one option of the publish role; known is false for an option that is not one
// of them.
func (c *Config) Parse(opt string, args []string) (known bool, err error) {
	return options.Parse(c, opt, args)
}

// options are the publish role's options: who writes and how (the writer's), which objects
// are read (the sources'), and which TXT registry is taken over.
var options = merge(writerOptions, sourceOptions, selectorOptions, registryOptions)

func merge(tables ...option.Table[*Config]) option.Table[*Config] {
	all := option.Table[*Config]{}
	for _, t := range tables {
		maps.Copy(all, t)
	}
	return all
}

var writerOptions = option.Table[*Config]{
	"owner": option.Word(func(c *Config, v string) error {
		if strings.ContainsAny(v, "/\"\\ ") {
			return fmt.Errorf("owner %q may not contain '/', quotes, backslashes or spaces", v)
		}
		c.Owner = v
		return nil
	}),
	"policy": option.Word(func(c *Config, v string) (err error) {
		c.Policy, err = plan.ParsePolicy(v)
		return err
	}),
	"conflict": option.Word(func(c *Config, v string) (err error) {
		c.Conflicts, err = plan.ParseConflictMode(v)
		return err
	}),
	"lease": option.Word(func(c *Config, v string) (err error) {
		if c.Lease, err = time.ParseDuration(v); err != nil {
			return err
		}
		return writer.CheckLease(c.Lease, writer.DefaultElectionTTL)
	}),
	"dry-run":         option.Flag(func(c *Config) { c.DryRun = true }),
	"domain-filter":   option.Words(func(c *Config, vs []string) error { c.DomainFilter = vs; return nil }),
	"exclude-domains": option.Words(func(c *Config, vs []string) error { c.ExcludeDomains = vs; return nil }),
}

var sourceOptions = option.Table[*Config]{
	"kubeconfig": func(c *Config, _ string, args []string) error {
		if len(args) < 1 || len(args) > 2 {
			return errors.New("kubeconfig needs a file and optionally a context")
		}
		c.Kubeconfig = args[0]
		if len(args) == 2 {
			c.Kubecontext = args[1]
		}
		return nil
	},
	"sources":                   option.Words(addSources),
	"namespaces":                option.Words(func(c *Config, vs []string) error { c.Source.Namespaces = vs; return nil }),
	"gateway-classes":           option.Words(func(c *Config, vs []string) error { c.Source.GatewayClasses = vs; return nil }),
	"gateway-name":              option.Word(func(c *Config, v string) error { c.Source.GatewayName = v; return nil }),
	"gateway-namespace":         option.Word(func(c *Config, v string) error { c.Source.GatewayNamespace = v; return nil }),
	"ingress-classes":           option.Words(func(c *Config, vs []string) error { c.Source.IngressClasses = vs; return nil }),
	"service-types":             option.Words(addServiceTypes),
	"publish-internal-services": option.Flag(func(c *Config) { c.Source.PublishInternal = true }),
	"controller":                option.Word(func(c *Config, v string) error { c.Source.ControllerName = v; return nil }),
	"ttl":                       option.Word(setTTL),
	"annotation-prefix":         option.Words(setAnnotationPrefixes),
	"base-domain-from-gateway":  option.Flag(func(c *Config) { c.Source.BaseDomainFromGateway = true }),
}

// selectorOptions are label selectors, parsed as external-dns parses its --label-filter,
// --annotation-filter and --gateway-label-filter.
var selectorOptions = option.Table[*Config]{
	"label-filter":         selector(func(c *Config, sel labels.Selector) { c.Source.LabelSelector = sel }),
	"annotation-filter":    selector(func(c *Config, sel labels.Selector) { c.Source.AnnotationFilter = sel }),
	"gateway-label-filter": selector(func(c *Config, sel labels.Selector) { c.Source.GatewayLabelSelector = sel }),
}

// registryOptions describe external-dns's TXT registry, to take over.
var registryOptions = option.Table[*Config]{
	"txt-owner-id":             registryWord(func(r *txtregistry.Config, v string) { r.Owner = v }),
	"txt-prefix":               registryWord(func(r *txtregistry.Config, v string) { r.Prefix = v }),
	"txt-suffix":               registryWord(func(r *txtregistry.Config, v string) { r.Suffix = v }),
	"txt-wildcard-replacement": registryWord(func(r *txtregistry.Config, v string) { r.WildcardReplacement = v }),
}

// addSources adds the kinds of external-dns --source names.
func addSources(c *Config, names []string) error {
	for _, n := range names {
		kind, known := sourceKinds[n]
		if !known {
			return fmt.Errorf("unknown source %q, want some of %s", n, strings.Join(slices.Sorted(maps.Keys(sourceKinds)), ", "))
		}
		c.Kinds = append(c.Kinds, kind)
	}
	return nil
}

func addServiceTypes(c *Config, types []string) error {
	for _, t := range types {
		st := corev1.ServiceType(t)
		if !slices.Contains(serviceTypes, st) {
			return fmt.Errorf("unknown service type %q, want some of %v", t, serviceTypes)
		}
		c.Source.ServiceTypes = append(c.Source.ServiceTypes, st)
	}
	return nil
}

func setTTL(c *Config, v string) error {
	ttl, err := option.TTL(v, 1, math.MaxUint32)
	c.Source.DefaultTTL = ttl
	return err
}

func setAnnotationPrefixes(c *Config, prefixes []string) error {
	for _, p := range prefixes {
		if err := checkAnnotationPrefix(p); err != nil {
			return err
		}
	}
	c.Source.AnnotationPrefixes = prefixes
	return nil
}

// selector reads a label selector. It may hold spaces ("expose in (yes,true)"): its words are
// joined again.
func selector(set func(c *Config, sel labels.Selector)) option.Func[*Config] {
	return func(c *Config, opt string, args []string) error {
		words, err := option.Some(opt, args)
		if err != nil {
			return err
		}
		v := strings.Join(words, " ")
		sel, err := labels.Parse(v)
		if err != nil {
			return fmt.Errorf("%s %q: %w", opt, v, err)
		}
		set(c, sel)
		return nil
	}
}

// registryWord sets one field of the TXT registry, which any of its options creates.
func registryWord(set func(r *txtregistry.Config, v string)) option.Func[*Config] {
	return option.Word(func(c *Config, v string) error {
		if c.Registry == nil {
			c.Registry = &txtregistry.Config{}
		}
		set(c.Registry, v)
		return nil
	})
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
