package tests

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// The overlays are rendered by renderKustomization, a renderer of the few kustomize features
// they use (kustomize itself is not a dependency of this module); when kubectl is installed its
// built-in kustomize must render the same objects.

// kustomization is the subset of kustomize's Kustomization that deploy/ uses.
type kustomization struct {
	APIVersion         string      `json:"apiVersion"`
	Kind               string      `json:"kind"`
	Resources          []string    `json:"resources"`
	Patches            []kPatch    `json:"patches"`
	ConfigMapGenerator []generator `json:"configMapGenerator"`
	SecretGenerator    []generator `json:"secretGenerator"`
	Images             []kImage    `json:"images"`
}

// kImage is one entry of kustomize's images: the containers whose image is Name (with any tag)
// get NewName and NewTag (or Digest) instead.
type kImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName"`
	NewTag  string `json:"newTag"`
	Digest  string `json:"digest"`
}

// nameHash is kustomize's name suffix of a generated ConfigMap (sigs.k8s.io/kustomize/api/hasher):
// the first 10 hex digits of the SHA-256 of {"data","kind","name"} as JSON, with the digits and
// letters that could spell words replaced. kustomize v5 hashes the object before it is named,
// so "name" is empty (checked against kubectl kustomize by renderOverlay).
func nameHash(data map[string]any) (string, error) {
	b, err := json.Marshal(map[string]any{"kind": "ConfigMap", "name": "", "data": data})
	if err != nil {
		return "", err
	}
	sum := fmt.Sprintf("%x", sha256.Sum256(b))
	return strings.Map(func(r rune) rune {
		switch r {
		case '0':
			return 'g'
		case '1':
			return 'h'
		case '3':
			return 'k'
		case 'a':
			return 'm'
		case 'e':
			return 't'
		}
		return r
	}, sum[:10]), nil
}

type kPatch struct {
	Path string `json:"path"`
}

type generator struct {
	Name      string   `json:"name"`
	Namespace string   `json:"namespace"`
	Type      string   `json:"type"`
	Files     []string `json:"files"`
	Options   struct {
		DisableNameSuffixHash bool              `json:"disableNameSuffixHash"`
		Labels                map[string]string `json:"labels"`
	} `json:"options"`
}

func objID(o *unstructured.Unstructured) string {
	return o.GroupVersionKind().GroupKind().String() + " " + o.GetNamespace() + "/" + o.GetName()
}

// readYAMLObjects reads the documents of a multi-document YAML file.
func readYAMLObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var m map[string]any
		if err := yaml.UnmarshalStrict(doc, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(m) == 0 {
			continue // a document of comments only
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// renderKustomization renders dir as kustomize would, for the features kustomization supports:
// resources (files and directories, in order), configMapGenerator and secretGenerator from
// files without name hashes, and strategic-merge patches by path. Anything else is an error, so
// the overlays cannot drift into features this renderer would silently get wrong.
func renderKustomization(dir string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, fmt.Errorf("%s/kustomization.yaml (only resources, patches by path and generators from files are supported): %w", dir, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		return nil, fmt.Errorf("%s: not a kustomize.config.k8s.io/v1beta1 Kustomization", dir)
	}
	var objs []*unstructured.Unstructured
	for _, res := range k.Resources {
		p := filepath.Join(dir, res)
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		var got []*unstructured.Unstructured
		if fi.IsDir() {
			got, err = renderKustomization(p)
		} else {
			got, err = readYAMLObjects(p)
		}
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	renamed := map[string]string{} // generated ConfigMaps: name -> name with its hash
	gen := func(kind string, g generator) (*unstructured.Unstructured, error) {
		if !g.Options.DisableNameSuffixHash && kind != "ConfigMap" {
			return nil, fmt.Errorf("%s %s: set options.disableNameSuffixHash (name hashes are rendered for ConfigMaps only)", kind, g.Name)
		}
		d := map[string]any{}
		for _, f := range g.Files {
			if strings.Contains(f, "=") {
				return nil, fmt.Errorf("%s %s: key=file is not supported", kind, g.Name)
			}
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				return nil, err
			}
			if kind == "Secret" {
				d[filepath.Base(f)] = b // []byte marshals as base64, as a Secret's data
			} else {
				d[filepath.Base(f)] = string(b)
			}
		}
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "data": d}}
		o.SetName(g.Name)
		o.SetNamespace(g.Namespace)
		if len(g.Options.Labels) > 0 {
			o.SetLabels(g.Options.Labels)
		}
		if kind == "Secret" {
			o.Object["type"] = cmpOr(g.Type, "Opaque")
		}
		if !g.Options.DisableNameSuffixHash {
			h, err := nameHash(d)
			if err != nil {
				return nil, err
			}
			o.SetName(g.Name + "-" + h)
			renamed[g.Name] = o.GetName()
		}
		// Through JSON, so that the []byte becomes its base64 string as in kustomize's output.
		b, err := json.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		return &unstructured.Unstructured{Object: m}, nil
	}
	for _, g := range k.ConfigMapGenerator {
		o, err := gen("ConfigMap", g)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
	for _, g := range k.SecretGenerator {
		o, err := gen("Secret", g)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
	seen := map[string]bool{}
	for _, o := range objs {
		if seen[objID(o)] {
			return nil, fmt.Errorf("%s: %s defined twice", dir, objID(o))
		}
		seen[objID(o)] = true
	}
	for _, p := range k.Patches {
		if p.Path == "" {
			return nil, fmt.Errorf("%s: only patches by path are supported", dir)
		}
		patches, err := readYAMLObjects(filepath.Join(dir, p.Path))
		if err != nil {
			return nil, err
		}
		for _, patch := range patches {
			i := slices.IndexFunc(objs, func(o *unstructured.Unstructured) bool { return objID(o) == objID(patch) })
			if i < 0 {
				return nil, fmt.Errorf("%s: patch %s: no %s", dir, p.Path, objID(patch))
			}
			typed, err := scheme.Scheme.New(patch.GroupVersionKind())
			if err != nil {
				return nil, fmt.Errorf("%s: patch %s: %w", dir, p.Path, err)
			}
			orig, _ := json.Marshal(objs[i].Object)
			pj, _ := json.Marshal(patch.Object)
			merged, err := strategicpatch.StrategicMergePatch(orig, pj, typed)
			if err != nil {
				return nil, fmt.Errorf("%s: patch %s: %w", dir, p.Path, err)
			}
			var m map[string]any
			if err := json.Unmarshal(merged, &m); err != nil {
				return nil, err
			}
			objs[i] = &unstructured.Unstructured{Object: m}
		}
	}
	// What kustomize does after the patches: the Deployments' references to a generated
	// ConfigMap follow its hashed name, and images: replaces the containers' images.
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		vols, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
		for _, v := range vols {
			if cm, ok := v.(map[string]any)["configMap"].(map[string]any); ok {
				if n, ok := renamed[cm["name"].(string)]; ok {
					cm["name"] = n
				}
			}
		}
		if vols != nil {
			_ = unstructured.SetNestedSlice(o.Object, vols, "spec", "template", "spec", "volumes")
		}
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range cs {
			c := c.(map[string]any)
			img := c["image"].(string)
			name := img
			if i := strings.LastIndexAny(img, ":@"); i > strings.LastIndex(img, "/") {
				name = img[:i]
			}
			for _, im := range k.Images {
				if im.Name != name {
					continue
				}
				n := cmpOr(im.NewName, name)
				switch {
				case im.Digest != "":
					c["image"] = n + "@" + im.Digest
				case im.NewTag != "":
					c["image"] = n + ":" + im.NewTag
				default:
					c["image"] = n + strings.TrimPrefix(img, name)
				}
			}
		}
		_ = unstructured.SetNestedSlice(o.Object, cs, "spec", "template", "spec", "containers")
	}
	return objs, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func renderOverlay(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "deploy", "overlays", name)
	objs, err := renderKustomization(dir)
	if err != nil {
		t.Fatalf("rendering %s: %v", dir, err)
	}
	// The real kustomize, when there is one, renders the same objects.
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		out, err := exec.Command(kubectl, "kustomize", dir).Output()
		if err != nil {
			t.Fatalf("kubectl kustomize %s: %v", dir, err)
		}
		f := filepath.Join(t.TempDir(), name+".yaml")
		if err := os.WriteFile(f, out, 0o644); err != nil {
			t.Fatal(err)
		}
		theirs, err := readYAMLObjects(f)
		if err != nil {
			t.Fatal(err)
		}
		byID := func(os []*unstructured.Unstructured) map[string]any {
			m := map[string]any{}
			for _, o := range os {
				o = o.DeepCopy()
				if o.GetKind() == "Secret" {
					// kustomize wraps base64 at 70 columns; the bytes are what matter.
					data, _, _ := unstructured.NestedStringMap(o.Object, "data")
					for k, v := range data {
						data[k] = strings.Join(strings.Fields(v), "")
					}
					_ = unstructured.SetNestedStringMap(o.Object, data, "data")
				}
				b, _ := json.Marshal(o.Object)
				var v any
				_ = json.Unmarshal(b, &v)
				m[objID(o)] = v
			}
			return m
		}
		mine, kust := byID(objs), byID(theirs)
		if !reflect.DeepEqual(mine, kust) {
			for _, id := range slices.Sorted(maps.Keys(kust)) {
				if !reflect.DeepEqual(mine[id], kust[id]) {
					a, _ := yaml.Marshal(mine[id])
					b, _ := yaml.Marshal(kust[id])
					t.Errorf("%s: %s differs from kubectl kustomize's:\nmine:\n%s\nkustomize:\n%s", name, id, a, b)
				}
			}
			for id := range mine {
				if _, ok := kust[id]; !ok {
					t.Errorf("%s: %s is not in kubectl kustomize's output", name, id)
				}
			}
		} else {
			t.Logf("%s: %d objects, the same as kubectl kustomize's", name, len(objs))
		}
	}
	return objs
}

func findObj(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		// A generated ConfigMap carries kustomize's 10-character hash after its name.
		if o.GetKind() == kind && (o.GetName() == name || kind == "ConfigMap" && len(o.GetName()) == len(name)+11 && strings.HasPrefix(o.GetName(), name+"-")) {
			return o
		}
	}
	t.Fatalf("no %s %s in the rendered objects", kind, name)
	return nil
}

// applyObjects creates objs (dry-run only when dryRun), with strict field validation.
func applyObjects(t *testing.T, cfg *rest.Config, objs []*unstructured.Unstructured, dryRun bool) {
	t.Helper()
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn := dynamic.NewForConfigOrDie(cfg)
	opts := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict, FieldManager: "deploy-test"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Errorf("%s: %v", objID(o), err)
			continue
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		for attempt := 0; ; attempt++ {
			_, err = ri.Create(ctx, o, opts)
			// kube-system is created by the API server shortly after it starts.
			if err != nil && apierrors.IsNotFound(err) && attempt < 50 {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			break
		}
		if err != nil {
			t.Errorf("%s (dry-run %v): refused: %v", objID(o), dryRun, err)
		}
	}
}

// access is one question for SelfSubjectAccessReview.
type access struct {
	verb, group, resource, subresource string
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	if a.group != "" {
		r += "." + a.group
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
			Namespace: ns, Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource,
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
	return out
}

var eventWrites = []access{{verb: "create", resource: "events"}, {verb: "patch", resource: "events"}}

const externalDNSGroup = "externaldns.k8s.io"

// dnsEndpointStatusWrites is the one write besides Events: a DNSEndpoint's observedGeneration.
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

// TestDeploy renders deploy/overlays/{workload,central}, has a real kube-apiserver accept every
// object (server-side dry-run, strict field validation), proves with RBAC that the
// ServiceAccount can do what CoreDNS and gatewaydns need and nothing more, and runs each
// overlay's Corefile with the built binary under the Deployment's environment and the
// ServiceAccount's permissions: workload publishes and forwards the zone to central, which
// answers it from etcd.
func TestDeploy(t *testing.T) {
	start := time.Now()
	workload := renderOverlay(t, "workload")
	central := renderOverlay(t, "central")
	t.Logf("rendered in %v", time.Since(start).Round(time.Millisecond))
	staticChecks(t, "workload", workload, true)
	staticChecks(t, "central", central, false)
	if t.Failed() {
		return
	}

	k := testenv.StartKubeAPIServer(t)
	k.InstallDNSEndpointCRD(t)
	t.Run("DryRunAccepted", func(t *testing.T) {
		applyObjects(t, k.Config, workload, true)
		applyObjects(t, k.Config, central, true)
	})

	// The workload overlay's RBAC for real, bound to kube-system/coredns; the central overlay's
	// for real too, renamed onto kube-system/coredns-central.
	applyObjects(t, k.Config, rbacOnly(workload), false)
	applyObjects(t, k.Config, renamedRBAC(central, "-central", "coredns-central"), false)
	if t.Failed() {
		return
	}
	workloadSA := k.UserConfig(t, saName, saGroups...)
	centralSA := k.UserConfig(t, "system:serviceaccount:kube-system:coredns-central", saGroups...)

	t.Run("WorkloadRBAC", func(t *testing.T) {
		allowed := slices.Concat(kubernetesPluginReads, gatewaydnsReads(), eventWrites, dnsEndpointStatusWrites)
		checkAccess(t, "workload coredns", workloadSA, allowed, neverAllowed())
		// And the actual lists the informers make, on whatever version is served.
		for _, r := range gatewayResources {
			if err := listAs(t, workloadSA, gatewayGroup, r); err != nil {
				t.Errorf("workload coredns lists %s: %v", r, err)
			}
		}
		for _, gr := range [][2]string{{"networking.k8s.io", "ingresses"}, {"", "namespaces"}, {"", "services"}, {"discovery.k8s.io", "endpointslices"}, {"", "nodes"}, {externalDNSGroup, "dnsendpoints"}} {
			if err := listAs(t, workloadSA, gr[0], gr[1]); err != nil {
				t.Errorf("workload coredns lists %s: %v", gr[1], err)
			}
		}
		for _, gr := range [][2]string{{"", "secrets"}, {"", "configmaps"}, {"", "pods"}} {
			if err := listAs(t, workloadSA, gr[0], gr[1]); !apierrors.IsForbidden(err) {
				t.Errorf("workload coredns lists %s: %v, want forbidden", gr[1], err)
			}
		}
	})
	t.Run("CentralRBAC", func(t *testing.T) {
		var denied []access
		denied = append(denied, neverAllowed()...)
		denied = append(denied, eventWrites...)
		denied = append(denied, dnsEndpointStatusWrites...)
		for _, a := range gatewaydnsReads() {
			if a.resource != "namespaces" {
				denied = append(denied, a)
			}
		}
		checkAccess(t, "central coredns", centralSA, kubernetesPluginReads, denied)
	})
	if t.Failed() {
		return
	}

	t.Run("Corefiles", func(t *testing.T) {
		e := testenv.StartEtcd(t, testenv.WithEtcdTLS())
		// The pods' /etc/gatewaydns/etcd, from the test etcd's client certificate.
		certs := t.TempDir()
		for name, src := range map[string]string{"ca.crt": e.TLS.CAFile, "tls.crt": e.TLS.ClientCertFile, "tls.key": e.TLS.ClientKeyFile} {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(certs, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		c := e.Client(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := c.Put(ctx, "/skydns/cluster/openmcp/us1/shop/5f6e7d8c", `{"host":"198.51.100.7","ttl":60}`); err != nil {
			t.Fatal(err)
		}

		cen, cenZone := runDeployedCorefile(t, "central", central, certs, k.UserKubeconfig(t, "system:serviceaccount:kube-system:coredns-central", saGroups...),
			map[string]string{"GATEWAYDNS_ETCD_ENDPOINTS": e.ClientURL})
		cen.waitReady(t, 60*time.Second)
		// Every source the shipped roles allow, the opt-in ones too (Services, DNSEndpoints), so
		// that each list, watch and write they grant is made for real.
		wl, _ := runDeployedCorefile(t, "workload", workload, certs, k.UserKubeconfig(t, saName, saGroups...),
			map[string]string{"GATEWAYDNS_ETCD_ENDPOINTS": e.ClientURL, "GATEWAYDNS_CENTRAL": cenZone},
			"sources gateway-httproute gateway-grpcroute gateway-tlsroute gateway-tcproute gateway-udproute ingress service crd")
		wl.waitReady(t, 60*time.Second)
		t.Logf("both Corefiles ready %v after the test started", time.Since(start).Round(time.Millisecond))

		kubeSvc, err := kubernetes.NewForConfigOrDie(k.Config).CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []*coreDNSProcess{cen, wl} {
			// cluster.local from the kubernetes plugin, with the ServiceAccount's permissions.
			r := waitFor(t, 10*time.Second, p.DNS, "kubernetes.default.svc.cluster.local", dns.TypeA, hasAnswer)
			if a, ok := r.Answer[0].(*dns.A); !ok || a.A.String() != kubeSvc.Spec.ClusterIP {
				t.Errorf("%s: kubernetes.default.svc.cluster.local = %v, want %s", p.DNS, r.Answer, kubeSvc.Spec.ClusterIP)
			}
		}
		// The zone: the workload cluster forwards it to central, which answers from etcd.
		r := waitFor(t, 10*time.Second, wl.DNS, "shop.us1.openmcp.cluster", dns.TypeA, hasAnswer)
		if a, ok := r.Answer[0].(*dns.A); !ok || a.A.String() != "198.51.100.7" {
			t.Errorf("shop.us1.openmcp.cluster via workload: %v", r.Answer)
		}
		// A change in etcd is answered through both.
		if _, err := c.Put(ctx, "/skydns/cluster/openmcp/us1/new/0a0b0c0d", `{"host":"198.51.100.8"}`); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, wl.DNS, "new.us1.openmcp.cluster", dns.TypeA, hasAnswer)
		// The central zone-only port (the LoadBalancer's target) answers the zone and refuses
		// everything else: no recursion, no cluster.local for whoever reaches it.
		if r := ask(t, "udp", cenZone, "shop.us1.openmcp.cluster.", dns.TypeA); !answersWith("198.51.100.7")(r) {
			t.Errorf("central zone port: shop.us1.openmcp.cluster: %v", r)
		}
		for _, name := range []string{"kubernetes.default.svc.cluster.local.", "example.org."} {
			if r := ask(t, "udp", cenZone, name, dns.TypeA); r.Rcode != dns.RcodeRefused || len(r.Answer) != 0 {
				t.Errorf("central zone port answers %s: %v, want REFUSED", name, r)
			}
		}
		// The workload writer runs: it leads for its owner (the overlay's), with its domain filter.
		deadline := time.Now().Add(20 * time.Second)
		want := `coredns_gatewaydns_writer_leader{owner="prod.platform.eu1"}`
		for {
			body, _ := httpGet("http://" + wl.Metrics + "/metrics")
			if v, _ := seriesValue(body, want); v == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("workload metrics never show %s", want)
			}
			time.Sleep(100 * time.Millisecond)
		}
		resp, err := c.Get(ctx, "/gatewaydns/leader/prod.platform.eu1/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil || resp.Count != 1 {
			t.Errorf("election key of prod.platform.eu1: count %v, err %v", resp, err)
		}
		checkWritesInTheCluster(t, k.Config, wl)
	})
	t.Logf("TestDeploy took %v", time.Since(start).Round(time.Millisecond))
}

var envRef = regexp.MustCompile(`\{\$([A-Z0-9_]+)\}`)

func container(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	d := findObj(t, objs, "Deployment", "coredns")
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		if c.(map[string]any)["name"] == "coredns" {
			return c.(map[string]any)
		}
	}
	t.Fatal("no container coredns")
	return nil
}

func containerEnv(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	env := map[string]string{}
	list, _, _ := unstructured.NestedSlice(container(t, objs), "env")
	for _, e := range list {
		m := e.(map[string]any)
		env[m["name"].(string)] = fmt.Sprint(m["value"])
	}
	return env
}

// staticChecks: what the Deployment and the Corefile must agree on.
func staticChecks(t *testing.T, name string, objs []*unstructured.Unstructured, publishes bool) {
	t.Helper()
	cm := findObj(t, objs, "ConfigMap", "coredns")
	corefile, _, _ := unstructured.NestedString(cm.Object, "data", "Corefile")
	env := containerEnv(t, objs)
	for _, m := range envRef.FindAllStringSubmatch(corefile, -1) {
		if v, ok := env[m[1]]; !ok || v == "" {
			t.Errorf("%s: the Corefile reads {$%s}, which the Deployment does not set", name, m[1])
		}
	}
	if got := strings.Contains(corefile, "owner {$GATEWAYDNS_OWNER}"); got != publishes {
		t.Errorf("%s: publishes = %v, want %v", name, got, publishes)
	}
	d := findObj(t, objs, "Deployment", "coredns")
	spec := d.Object["spec"].(map[string]any)
	if spec["replicas"] != int64(2) && spec["replicas"] != float64(2) {
		t.Errorf("%s: replicas %v, want 2", name, spec["replicas"])
	}
	c := container(t, objs)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	if !reflect.DeepEqual(args, []string{"-conf", "/etc/coredns/Corefile"}) {
		t.Errorf("%s: args %v", name, args)
	}
	mounts := map[string]string{}
	vm, _, _ := unstructured.NestedSlice(c, "volumeMounts")
	for _, m := range vm {
		mounts[m.(map[string]any)["mountPath"].(string)] = m.(map[string]any)["name"].(string)
	}
	if mounts["/etc/coredns"] == "" || mounts["/etc/gatewaydns/etcd"] == "" {
		t.Errorf("%s: volume mounts %v lack /etc/coredns or /etc/gatewaydns/etcd", name, mounts)
	}
	if !strings.Contains(corefile, "tls /etc/gatewaydns/etcd/tls.crt /etc/gatewaydns/etcd/tls.key /etc/gatewaydns/etcd/ca.crt") {
		t.Errorf("%s: the Corefile does not use the mounted etcd certificates", name)
	}
	secret := findObj(t, objs, "Secret", "gatewaydns-etcd")
	for _, key := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if _, ok, _ := unstructured.NestedString(secret.Object, "data", key); !ok {
			t.Errorf("%s: Secret gatewaydns-etcd has no %s", name, key)
		}
	}
	// The probes and the metrics port are those the Corefile's plugins listen on by default.
	for _, want := range []string{"\n    health {", "\n    ready\n", "\n    prometheus :9153\n"} {
		if !strings.Contains(corefile, want) {
			t.Errorf("%s: the Corefile lacks %q (the probes use :8080/health, :8181/ready, metrics :9153)", name, want)
		}
	}
	ports := map[string]int64{}
	cp, _, _ := unstructured.NestedSlice(c, "ports")
	for _, p := range cp {
		m := p.(map[string]any)
		ports[m["name"].(string)] = toInt64(m["containerPort"])
	}
	if ports["liveness-probe"] != 8080 || ports["readiness-probe"] != 8181 || ports["metrics"] != 9153 || ports["dns"] != 53 || ports["dns-tcp"] != 53 {
		t.Errorf("%s: container ports %v", name, ports)
	}
	// A hashed ConfigMap name, mounted: a new Corefile is a new ConfigMap, old pods keep theirs.
	vols, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	mounted := ""
	for _, v := range vols {
		if cmv, ok := v.(map[string]any)["configMap"].(map[string]any); ok {
			mounted, _ = cmv["name"].(string)
		}
	}
	if mounted != cm.GetName() || mounted == "coredns" {
		t.Errorf("%s: the Deployment mounts ConfigMap %q, want the generated %q (coredns-<hash>)", name, mounted, cm.GetName())
	}
	// The image is set by the overlay's images:, never the base's placeholder or :latest.
	if img, _ := c["image"].(string); img == "gatewaydns-coredns" || strings.HasSuffix(img, ":latest") || !strings.Contains(img, "/") {
		t.Errorf("%s: image %q: set it through the overlay's images:", name, img)
	}
	// Memory sized for 100k records (docs/operations.md "Capacity": +136-152 MB over the stock
	// 170Mi), GOMEMLIMIT below the limit so the collector acts before the OOM killer.
	limit, _, _ := unstructured.NestedString(c, "resources", "limits", "memory")
	if limit != "384Mi" || env["GOMEMLIMIT"] != "320MiB" {
		t.Errorf("%s: memory limit %q, GOMEMLIMIT %q; want 384Mi and 320MiB", name, limit, env["GOMEMLIMIT"])
	}
	if !publishes {
		svc := findObj(t, objs, "Service", "gatewaydns")
		ranges, _, _ := unstructured.NestedStringSlice(svc.Object, "spec", "loadBalancerSourceRanges")
		if len(ranges) == 0 {
			t.Errorf("%s: Service gatewaydns has no loadBalancerSourceRanges: open to anyone", name)
		}
		sp, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
		for _, p := range sp {
			if tp := p.(map[string]any)["targetPort"]; tp != "dns-zone" && tp != "dns-zone-tcp" {
				t.Errorf("%s: Service gatewaydns sends to %v, want the zone-only port", name, tp)
			}
		}
	}
	if p, _, _ := unstructured.NestedString(c, "livenessProbe", "httpGet", "path"); p != "/health" {
		t.Errorf("%s: liveness path %q", name, p)
	}
	if p, _, _ := unstructured.NestedString(c, "readinessProbe", "httpGet", "path"); p != "/ready" {
		t.Errorf("%s: readiness path %q", name, p)
	}
}

func toInt64(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	case int:
		return int64(n)
	}
	return -1
}

var (
	serverKey53   = regexp.MustCompile(`(?m)^(\S+):53 `)
	serverKey5353 = regexp.MustCompile(`(\S+):5353 \{`)
	healthLine    = regexp.MustCompile(`(?m)^(\s*)health \{`)
	readyLine     = regexp.MustCompile(`(?m)^(\s*)ready$`)
	prometheusLn  = regexp.MustCompile(`(?m)^(\s*)prometheus :9153$`)
	kubernetesLn  = regexp.MustCompile(`(?m)^(\s*)kubernetes cluster\.local[^\n]*\{$`)
	gatewaydnsLn  = regexp.MustCompile(`(?m)^(\s*)gatewaydns \{$`)
	etcdCertsPath = "/etc/gatewaydns/etcd/"
)

// runDeployedCorefile runs the built binary with the Corefile of objs's ConfigMap and the
// environment of its Deployment (overridden by env), changed only where a pod and this test
// differ: loopback ports instead of :53/:8080/:8181/:9153, the certificates' directory, and a
// kubeconfig for the ServiceAccount instead of in-cluster credentials; options are added to
// the gatewaydns stanzas.
//
// It returns the process and the address of the zone-only listener (the Corefile's :5353).
func runDeployedCorefile(t *testing.T, name string, objs []*unstructured.Unstructured, certs, kubeconfig string, env map[string]string, options ...string) (*coreDNSProcess, string) {
	t.Helper()
	cm := findObj(t, objs, "ConfigMap", "coredns")
	corefile, _, _ := unstructured.NestedString(cm.Object, "data", "Corefile")
	p := newCoreDNSProcess(t)
	_, port, _ := net.SplitHostPort(p.DNS)
	corefile = serverKey53.ReplaceAllString(corefile, "$1:"+port+" ")
	// The central zone-only listener (:5353) on a port of its own, on the DNS address's host.
	zonePort := fmt.Sprint(freePort(t))
	corefile = serverKey5353.ReplaceAllString(corefile, "$1:"+zonePort+" {")
	corefile = healthLine.ReplaceAllString(corefile, "${1}health "+p.Health+" {")
	corefile = readyLine.ReplaceAllString(corefile, "${1}ready "+p.Ready)
	corefile = prometheusLn.ReplaceAllString(corefile, "${1}prometheus "+p.Metrics)
	corefile = kubernetesLn.ReplaceAllString(corefile, "$0\n${1}    kubeconfig "+kubeconfig)
	if strings.Contains(corefile, "owner ") {
		corefile = gatewaydnsLn.ReplaceAllString(corefile, "$0\n${1}    kubeconfig "+kubeconfig)
	}
	for _, o := range options {
		corefile = gatewaydnsLn.ReplaceAllString(corefile, "$0\n${1}    "+o)
	}
	corefile = strings.ReplaceAll(corefile, etcdCertsPath, certs+"/")
	vars := containerEnv(t, objs)
	maps.Copy(vars, env)
	var environ []string
	for k, v := range vars {
		environ = append(environ, k+"="+v)
	}
	p.start(t, name+".Corefile", corefile, nil, environ)
	host, _, _ := net.SplitHostPort(p.DNS)
	return p, net.JoinHostPort(host, zonePort)
}
