package deploy

// The RBAC questions TestDeploy asks: what the shipped roles must allow, and what never.

import (
	"context"
	"fmt"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// access is one question for SelfSubjectAccessReview.
type access struct {
	verb, group, resource, subresource string
	name                               string // one object, for a rule limited by resourceNames
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	if a.group != "" {
		r += "." + a.group
	}
	if a.name != "" {
		r += " " + a.name
	}
	return a.verb + " " + r
}

func can(t *testing.T, cs kubernetes.Interface, a access) bool {
	t.Helper()
	ns := ""
	if a.resource == "events" || a.resource == "secrets" || a.resource == "configmaps" || a.resource == "pods" {
		ns = "kube-system"
	}
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Name: a.name,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectAccessReview %s: %v", a, err)
	}
	return r.Status.Allowed
}

const gatewayGroup = "gateway.networking.k8s.io"

var gatewayResources = []string{"gateways", "listenersets", "httproutes", "grpcroutes", "tlsroutes", "tcproutes", "udproutes"}

// kubernetesPluginReads is what CoreDNS's kubernetes plugin lists and watches ("pods insecure").
var kubernetesPluginReads = []access{
	{verb: "list", resource: "services"}, {verb: "watch", resource: "services"},
	{verb: "list", resource: "namespaces"}, {verb: "watch", resource: "namespaces"},
	{verb: "list", group: "discovery.k8s.io", resource: "endpointslices"},
	{verb: "watch", group: "discovery.k8s.io", resource: "endpointslices"},
}

// gatewaydnsReads is what the gatewaydns writer reads (kubesource: informers on these).
func gatewaydnsReads() []access {
	var out []access
	for _, verb := range []string{"list", "watch"} {
		for _, r := range gatewayResources {
			out = append(out, access{verb: verb, group: gatewayGroup, resource: r})
		}
		out = append(out, access{verb: verb, group: "networking.k8s.io", resource: "ingresses"},
			access{verb: verb, group: externalDNSGroup, resource: "dnsendpoints"},
			access{verb: verb, resource: "namespaces"}, access{verb: verb, resource: "nodes"})
	}
	// The CRDs of those kinds, by name: what confirms a 404 of discovery.
	for _, r := range gatewayResources {
		out = append(out, access{verb: "get", group: crdGroup, resource: "customresourcedefinitions", name: r + "." + gatewayGroup})
	}
	out = append(out, access{verb: "get", group: crdGroup, resource: "customresourcedefinitions", name: "dnsendpoints." + externalDNSGroup})
	return out
}

const crdGroup = "apiextensions.k8s.io"

var eventWrites = []access{{verb: "create", resource: "events"}, {verb: "patch", resource: "events"}}

const externalDNSGroup = "externaldns.k8s.io"

// dnsEndpointStatusWrites is the one write besides Events: a DNSEndpoint's status (observedGeneration, conditions).
var dnsEndpointStatusWrites = []access{{verb: "patch", group: externalDNSGroup, resource: "dnsendpoints", subresource: "status"}}

// neverAllowed is what neither role may do.
func neverAllowed() []access {
	out := []access{
		// The informers list and watch; nothing gets one object.
		{verb: "get", group: "networking.k8s.io", resource: "ingresses"},
		{verb: "get", group: gatewayGroup, resource: "httproutes"},
		{verb: "get", group: gatewayGroup, resource: "gateways"},
		{verb: "get", resource: "secrets"}, {verb: "list", resource: "secrets"}, {verb: "watch", resource: "secrets"},
		{verb: "get", resource: "configmaps"}, {verb: "list", resource: "configmaps"},
		{verb: "get", resource: "pods"}, {verb: "list", resource: "pods"}, {verb: "watch", resource: "pods"},
		{verb: "update", resource: "events"}, {verb: "delete", resource: "events"},
		{verb: "create", resource: "serviceaccounts", subresource: "token"},
		{verb: "create", group: "coordination.k8s.io", resource: "leases"},
		{verb: "update", resource: "namespaces"},
		{verb: "update", group: "networking.k8s.io", resource: "ingresses"},
		{verb: "update", group: "networking.k8s.io", resource: "ingresses", subresource: "status"},
		{verb: "create", group: "discovery.k8s.io", resource: "endpointslices"},
		{verb: "update", resource: "services"},
		{verb: "get", resource: "nodes"}, {verb: "update", resource: "nodes"},
		// Only the CRDs of the kinds read, and only one at a time.
		{verb: "get", group: crdGroup, resource: "customresourcedefinitions", name: "certificates.cert-manager.io"},
		{verb: "list", group: crdGroup, resource: "customresourcedefinitions"},
		{verb: "update", group: crdGroup, resource: "customresourcedefinitions", name: "httproutes." + gatewayGroup},
	}
	for _, verb := range []string{"get", "create", "update", "patch", "delete"} {
		out = append(out, access{verb: verb, group: externalDNSGroup, resource: "dnsendpoints"})
	}
	out = append(out, access{verb: "update", group: externalDNSGroup, resource: "dnsendpoints", subresource: "status"})
	for _, r := range append([]string{"gatewayclasses"}, gatewayResources...) {
		for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection"} {
			out = append(out, access{verb: verb, group: gatewayGroup, resource: r})
		}
		out = append(out, access{verb: "update", group: gatewayGroup, resource: r, subresource: "status"},
			access{verb: "patch", group: gatewayGroup, resource: r, subresource: "status"})
	}
	return out
}

// checkAccess asserts that cfg's identity may do every allowed and none of denied.
func checkAccess(t *testing.T, who string, cfg *rest.Config, allowed, denied []access) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cfg)
	for _, a := range allowed {
		if !can(t, cs, a) {
			t.Errorf("%s cannot %s; it must", who, a)
		}
	}
	for _, a := range denied {
		if can(t, cs, a) {
			t.Errorf("%s can %s; it must not", who, a)
		}
	}
}

// listAs lists resource (all versions the server serves, first one found) as cfg's identity.
func listAs(t *testing.T, cfg *rest.Config, group, resource string) error {
	t.Helper()
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Group: group, Resource: resource})
	if err != nil {
		return fmt.Errorf("not served: %w", err)
	}
	_, err = dynamic.NewForConfigOrDie(cfg).Resource(gvr).List(context.Background(), metav1.ListOptions{Limit: 1})
	return err
}

// saName is the ServiceAccount of the base, as the API server authenticates its tokens.
const saName = "system:serviceaccount:kube-system:coredns"

var saGroups = []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}

// renamedRBAC returns the RBAC objects of objs with names suffixed and subjects moved to the
// ServiceAccount sa, so that a second overlay's roles can live in the same API server.
func renamedRBAC(objs []*unstructured.Unstructured, suffix, sa string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole", "ClusterRoleBinding", "ServiceAccount":
		default:
			continue
		}
		c := o.DeepCopy()
		if o.GetKind() == "ServiceAccount" {
			c.SetName(sa)
		} else {
			c.SetName(o.GetName() + suffix)
		}
		if o.GetKind() == "ClusterRoleBinding" {
			_ = unstructured.SetNestedField(c.Object, o.Object["roleRef"].(map[string]any)["name"].(string)+suffix, "roleRef", "name")
			subjects, _, _ := unstructured.NestedSlice(c.Object, "subjects")
			for _, s := range subjects {
				s.(map[string]any)["name"] = sa
			}
			_ = unstructured.SetNestedSlice(c.Object, subjects, "subjects")
		}
		out = append(out, c)
	}
	return out
}

func rbacOnly(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	return renamedRBAC(objs, "", "coredns")
}
