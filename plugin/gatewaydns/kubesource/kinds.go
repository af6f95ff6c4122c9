package kubesource

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// KindNamespace is the kind of the Namespace informer (watched for allowedRoutes selectors).
const KindNamespace = "Namespace"

// KindEndpointSlice and KindNode are the kinds of the informers that Services read besides
// themselves: a headless or NodePort Service's names change with its endpoints and the nodes.
const (
	KindEndpointSlice = "EndpointSlice"
	KindNode          = "Node"
)

// optInKinds are read only when the sources option names them: external-dns users run them
// as separate --source flags, and a stanza written before they existed must not start
// publishing every annotated Service, or whatever names and records a DNSEndpoint's author
// writes.
var optInKinds = []string{source.KindService, source.KindDNSEndpoint}

// serviceIndex is the name of the EndpointSlice informer's index by the Service they belong to.
const serviceIndex = "service"

// gatewayIndex is the name of the route informers' index of source.ParentGatewayKeys.
const gatewayIndex = "gateway"

// gatewayKind describes a Gateway API kind: its resource and the versions that can be watched,
// most preferred first. Discovery picks the first version the API server serves.
type gatewayKind struct {
	kind     string
	resource string
	versions []string
	informer func(c gwclient.Interface, s *slimmer, resource, version, namespace string) listSource
	route    bool
	// group is the API group; "" is the Gateway API's. dynamic, when set, builds the informer
	// instead of informer (a kind read with the dynamic client: DNSEndpoint).
	group   string
	dynamic func(ctx context.Context, w *Watcher, version, namespace string) listSource
}

// gatewayKinds are the Gateway API kinds watched, Gateway first. The versions are those that
// source.RouteOf understands: v1 wherever the cluster serves it (TLSRoute is v1 from
// gateway-api v1.5, TCPRoute and UDPRoute from v1.6); v1beta1 Gateways and HTTPRoutes and
// v1alpha2 TLS, TCP and UDP routes for clusters whose CRDs are older. A v1beta1 object is the
// v1 object under another name (its Go type is defined as the v1 type), so the slimmer turns it
// into the v1 type and everything after the informer sees v1 only.
var gatewayKinds = []gatewayKind{
	{kind: source.KindGateway, resource: "gateways", versions: []string{"v1", "v1beta1"},
		informer: func(c gwclient.Interface, s *slimmer, resource, version, ns string) listSource {
			if version == "v1beta1" {
				r := c.GatewayV1beta1().Gateways(ns)
				return gatewayInformer[gatewayv1.Gateway](s, c, c.GatewayV1beta1().RESTClient(), resource, ns, r.List, r.Watch, cache.Indexers{})
			}
			r := c.GatewayV1().Gateways(ns)
			return gatewayInformer[gatewayv1.Gateway](s, c, c.GatewayV1().RESTClient(), resource, ns, r.List, r.Watch, cache.Indexers{})
		}},
	listenerSetKind,
	{kind: source.KindHTTPRoute, resource: "httproutes", versions: []string{"v1", "v1beta1"}, route: true,
		informer: func(c gwclient.Interface, s *slimmer, resource, version, ns string) listSource {
			if version == "v1beta1" {
				r := c.GatewayV1beta1().HTTPRoutes(ns)
				return gatewayInformer[gatewayv1.HTTPRoute](s, c, c.GatewayV1beta1().RESTClient(), resource, ns, r.List, r.Watch, routeIndexers())
			}
			r := c.GatewayV1().HTTPRoutes(ns)
			return gatewayInformer[gatewayv1.HTTPRoute](s, c, c.GatewayV1().RESTClient(), resource, ns, r.List, r.Watch, routeIndexers())
		}},
	{kind: source.KindGRPCRoute, resource: "grpcroutes", versions: []string{"v1"}, route: true,
		informer: func(c gwclient.Interface, s *slimmer, resource, _, ns string) listSource {
			r := c.GatewayV1().GRPCRoutes(ns)
			return gatewayInformer[gatewayv1.GRPCRoute](s, c, c.GatewayV1().RESTClient(), resource, ns, r.List, r.Watch, routeIndexers())
		}},
	{kind: source.KindTLSRoute, resource: "tlsroutes", versions: []string{"v1", "v1alpha2"}, route: true,
		informer: func(c gwclient.Interface, s *slimmer, resource, version, ns string) listSource {
			if version == "v1alpha2" {
				r := c.GatewayV1alpha2().TLSRoutes(ns)
				return gatewayInformer[gatewayv1alpha2.TLSRoute](s, c, c.GatewayV1alpha2().RESTClient(), resource, ns, r.List, r.Watch, routeIndexers())
			}
			r := c.GatewayV1().TLSRoutes(ns)
			return gatewayInformer[gatewayv1.TLSRoute](s, c, c.GatewayV1().RESTClient(), resource, ns, r.List, r.Watch, routeIndexers())
		}},
	{kind: source.KindTCPRoute, resource: "tcproutes", versions: []string{"v1", "v1alpha2"}, route: true,
		informer: func(c gwclient.Interface, s *slimmer, resource, version, ns string) listSource {
			if version == "v1alpha2" {
				r := c.GatewayV1alpha2().TCPRoutes(ns)
				return gatewayInformer[gatewayv1alpha2.TCPRoute](s, c, c.GatewayV1alpha2().RESTClient(), resource, ns, r.List, r.Watch, routeIndexers())
			}
			r := c.GatewayV1().TCPRoutes(ns)
			return gatewayInformer[gatewayv1.TCPRoute](s, c, c.GatewayV1().RESTClient(), resource, ns, r.List, r.Watch, routeIndexers())
		}},
	{kind: source.KindUDPRoute, resource: "udproutes", versions: []string{"v1", "v1alpha2"}, route: true,
		informer: func(c gwclient.Interface, s *slimmer, resource, version, ns string) listSource {
			if version == "v1alpha2" {
				r := c.GatewayV1alpha2().UDPRoutes(ns)
				return gatewayInformer[gatewayv1alpha2.UDPRoute](s, c, c.GatewayV1alpha2().RESTClient(), resource, ns, r.List, r.Watch, routeIndexers())
			}
			r := c.GatewayV1().UDPRoutes(ns)
			return gatewayInformer[gatewayv1.UDPRoute](s, c, c.GatewayV1().RESTClient(), resource, ns, r.List, r.Watch, routeIndexers())
		}},
}

func routeIndexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		gatewayIndex:         source.ParentGatewayKeys,
		listenerSetIndex:     source.ParentListenerSetKeys,
	}
}

// coreSource is how to read a kind of the core clientset c: its list and watch in one
// namespace, streamed as client-go streams them (c supports WatchList).
func coreSource[L runtime.Object](c kubernetes.Interface, object runtime.Object, indexers cache.Indexers,
	list func(context.Context, metav1.ListOptions) (L, error), watchObjects watchFunc) listSource {
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc:  func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return list(ctx, opts) },
		WatchFuncWithContext: cache.WatchFuncWithContext(watchObjects),
	}, c)
	return listSource{lw: lw, object: object, indexers: indexers}
}

func newIngressInformer(c kubernetes.Interface) newInformer {
	return func(ns string) listSource {
		r := c.NetworkingV1().Ingresses(ns)
		return coreSource(c, &networkingv1.Ingress{}, cache.Indexers{}, r.List, r.Watch)
	}
}

func newServiceInformer(c kubernetes.Interface) newInformer {
	return func(ns string) listSource {
		r := c.CoreV1().Services(ns)
		return coreSource(c, &corev1.Service{}, cache.Indexers{}, r.List, r.Watch)
	}
}

func newEndpointSliceInformer(c kubernetes.Interface) newInformer {
	return func(ns string) listSource {
		r := c.DiscoveryV1().EndpointSlices(ns)
		return coreSource(c, &discoveryv1.EndpointSlice{}, cache.Indexers{serviceIndex: endpointSliceService}, r.List, r.Watch)
	}
}

func newNodeInformer(c kubernetes.Interface) newInformer {
	return func(string) listSource {
		r := c.CoreV1().Nodes()
		return coreSource(c, &corev1.Node{}, cache.Indexers{}, r.List, r.Watch)
	}
}

// endpointSliceService indexes an EndpointSlice by "namespace/name" of its Service (the
// kubernetes.io/service-name label, which the EndpointSlice controller sets).
func endpointSliceService(obj any) ([]string, error) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || es.Labels[discoveryv1.LabelServiceName] == "" {
		return nil, nil
	}
	return []string{es.Namespace + "/" + es.Labels[discoveryv1.LabelServiceName]}, nil
}

// newNamespaceInformer reads every Namespace, or for a namespace name only that one (a list
// and watch with the field selector metadata.name, which RBAC lets a ClusterRole limited by
// resourceNames allow).
func newNamespaceInformer(c kubernetes.Interface) newInformer {
	return func(name string) listSource {
		r := c.CoreV1().Namespaces()
		if name == "" {
			return coreSource(c, &corev1.Namespace{}, cache.Indexers{}, r.List, r.Watch)
		}
		only := func(o metav1.ListOptions) metav1.ListOptions {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
			return o
		}
		return coreSource(c, &corev1.Namespace{}, cache.Indexers{},
			func(ctx context.Context, o metav1.ListOptions) (*corev1.NamespaceList, error) {
				return r.List(ctx, only(o))
			},
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return r.Watch(ctx, only(o)) })
	}
}

// namespacesOf returns the namespaces whose objects of kind are read, one informer each; none
// means one informer for all. With the namespaces option set, routes, Ingresses, Services and
// EndpointSlices are read in those namespaces only, and of the Namespaces only those; Gateways
// in the gateway-namespace when it is set (routes may attach to Gateways elsewhere);
// ListenerSets as listenerSetNamespaces says.
func (w *Watcher) namespacesOf(kind string) []string {
	switch kind {
	case KindNode:
		return nil
	case source.KindGateway:
		if w.cfg.GatewayNamespace != "" {
			return []string{w.cfg.GatewayNamespace}
		}
		return nil
	case source.KindListenerSet:
		return w.listenerSetNamespaces()
	}
	return w.cfg.Namespaces
}

// apiVersionOf returns the apiVersion of an object of kind served at version, for Events.
func apiVersionOf(kind, version string) string {
	switch kind {
	case source.KindIngress:
		return "networking.k8s.io/v1"
	case KindNamespace, source.KindService:
		return "v1"
	case source.KindDNSEndpoint:
		return source.DNSEndpointGVR.Group + "/" + version
	}
	return gatewayv1.GroupName + "/" + version
}
