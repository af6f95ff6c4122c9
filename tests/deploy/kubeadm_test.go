package deploy

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/gatewaydns/gatewaydns/internal/docblocks"
	"github.com/gatewaydns/gatewaydns/internal/kustomize"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// objectClient returns the dynamic client of o's resource (in o's namespace, if it has one).
func objectClient(t *testing.T, cfg *rest.Config, o *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	gvk := o.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s: %v", kustomize.ID(o), err)
	}
	ri := dynamic.NewForConfigOrDie(cfg).Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return ri.Namespace(o.GetNamespace())
	}
	return ri
}

// serverSideApply applies o as `kubectl apply --server-side --field-manager=manager
// [--force-conflicts]` does and returns what the API server made of it.
func serverSideApply(t *testing.T, cfg *rest.Config, o *unstructured.Unstructured, manager string, force bool) (*unstructured.Unstructured, error) {
	t.Helper()
	ri := objectClient(t, cfg, o)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := metav1.ApplyOptions{FieldManager: manager, Force: force}
	for attempt := 0; ; attempt++ {
		got, err := ri.Apply(ctx, o.GetName(), o, opts)
		// kube-system is created by the API server shortly after it starts.
		if err != nil && apierrors.IsNotFound(err) && attempt < 50 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return got, err
	}
}

// conflicts are the fields of a server-side apply's conflict error, as "field: message".
func conflicts(err error) []string {
	var out []string
	if st, ok := err.(apierrors.APIStatus); ok && st.Status().Details != nil {
		for _, c := range st.Status().Details.Causes {
			out = append(out, c.Field+": "+c.Message)
		}
	}
	return out
}

// kubeadmObjects are the objects kubeadm's CoreDNS add-on phase makes
// (cmd/kubeadm/app/phases/addons/dns).
var kubeadmObjects = []struct{ apiVersion, kind, namespace, name string }{
	{"rbac.authorization.k8s.io/v1", "ClusterRole", "", "system:coredns"},
	{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "system:coredns"},
	{"v1", "ServiceAccount", "kube-system", "coredns"},
	{"v1", "ConfigMap", "kube-system", "coredns"},
	{"apps/v1", "Deployment", "kube-system", "coredns"},
	{"v1", "Service", "kube-system", "kube-dns"},
}

// kubeadmState reads kubeadm's CoreDNS objects, by kustomize.ID.
func kubeadmState(t *testing.T, cfg *rest.Config) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, k := range kubeadmObjects {
		ref := &unstructured.Unstructured{}
		ref.SetAPIVersion(k.apiVersion)
		ref.SetKind(k.kind)
		ref.SetNamespace(k.namespace)
		ref.SetName(k.name)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		o, err := objectClient(t, cfg, ref).Get(ctx, k.name, metav1.GetOptions{})
		cancel()
		if err != nil {
			t.Fatalf("kubeadm's %s: %v", kustomize.ID(ref), err)
		}
		out[kustomize.ID(o)] = o
	}
	return out
}

// kubeadmCoreDNS runs the real kubeadm's CoreDNS add-on phase against k: what `kubeadm init`
// runs, and `kubeadm upgrade apply` again (both call EnsureDNSAddon). The cluster's service
// range is envtest's, 10.0.0.0/24, so kube-dns gets 10.0.0.10.
func kubeadmCoreDNS(kubeadm string, k *testenv.Kube) (string, error) {
	config := filepath.Join(k.Dir, "kubeadm.yaml")
	err := os.WriteFile(config, []byte(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 192.0.2.10 # not used by the add-on phase; any global unicast address passes its check
nodeRegistration:
  name: node-1
  criSocket: unix:///run/containerd/containerd.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
networking:
  serviceSubnet: 10.0.0.0/24
  dnsDomain: cluster.local
`), 0o600)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, kubeadm, "init", "phase", "addon", "coredns",
		"--config", config, "--kubeconfig", k.KubeconfigFile).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// managedBy is the set of fields manager holds in o (with operation, "" for any).
func managedBy(t *testing.T, o *unstructured.Unstructured, manager string, op metav1.ManagedFieldsOperationType) *fieldpath.Set {
	t.Helper()
	set := &fieldpath.Set{}
	for _, mf := range o.GetManagedFields() {
		if mf.Manager != manager || op != "" && mf.Operation != op || mf.FieldsV1 == nil {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(strings.NewReader(string(mf.FieldsV1.Raw))); err != nil {
			t.Fatalf("%s: managed fields of %s: %v", kustomize.ID(o), manager, err)
		}
		set = set.Union(s)
	}
	return set
}

// managers lists o's field managers as "manager/operation".
func managers(o *unstructured.Unstructured) []string {
	var out []string
	for _, mf := range o.GetManagedFields() {
		out = append(out, fmt.Sprintf("%s/%s", mf.Manager, mf.Operation))
	}
	slices.Sort(out)
	return out
}

// imagePath is the one field the kubeadm-image overlay sets.
var imagePath = fieldpath.MakePathOrDie("spec", "template", "spec", "containers",
	fieldpath.KeyByFields("name", "coredns"), "image")

var deploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

func containerImage(t *testing.T, d *unstructured.Unstructured) string {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		if c := c.(map[string]any); c["name"] == "coredns" {
			return c["image"].(string)
		}
	}
	t.Fatalf("%s has no container coredns", kustomize.ID(d))
	return ""
}

func mountedConfigMap(d *unstructured.Unstructured) string {
	vols, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	for _, v := range vols {
		if v.(map[string]any)["name"] == "config-volume" {
			name, _, _ := unstructured.NestedString(v.(map[string]any), "configMap", "name")
			return name
		}
	}
	return ""
}

const kubeadmDeployment = "Deployment.apps kube-system/coredns"

// runDocumented runs the command block of file that starts with prefix (kubectl kustomize DIR |
// kubectl apply ... --force-conflicts -f -) as written, against k, from the repository's root.
// Without kubectl it applies objs as the command would (server-side, forced, field manager
// gatewaydns), and says so.
func runDocumented(t *testing.T, k *testenv.Kube, file, prefix string, objs []*unstructured.Unstructured) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	command, err := docblocks.Command(filepath.Join(root, file), prefix)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(command, "--force-conflicts") {
		t.Fatalf("%s shows no %s | kubectl apply --force-conflicts: %q", file, prefix, command)
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Logf("kubectl is not installed: %s applied as its command would, not by it", prefix)
		for _, o := range objs {
			if _, err := serverSideApply(t, k.Config, o, "gatewaydns", true); err != nil {
				t.Errorf("%s: %s: %v", prefix, kustomize.ID(o), err)
			}
		}
		return
	}
	run := strings.ReplaceAll(command, "kubectl apply", "kubectl --kubeconfig "+k.KubeconfigFile+" apply")
	cmd := exec.Command("bash", "-o", "pipefail", "-c", run)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %s: %v\n%s", file, command, err, out)
	}
	t.Logf("%s: %s:\n%s", file, command, out)
}

// TestDeployKubeadmImageSwap follows deploy/README.md "On a cluster that runs kubeadm's CoreDNS"
// on a real kube-apiserver where the real kubeadm (v1.36.3, the version tools/go.mod pins) ran
// its CoreDNS add-on phase: kubeadm's own manifests (ClusterRole, ClusterRoleBinding,
// ServiceAccount, ConfigMap, Deployment, Service), made as kubeadm makes them (create, then
// update: the API server names the field manager "kubeadm" after its user agent, operation
// Update). Step 1 (overlays/kubeadm-image, server-side apply) conflicts on the image alone, and
// with --force-conflicts takes that one field and changes nothing else. Step 2
// (overlays/workload) conflicts on the fields kubeadm set that the overlay sets otherwise;
// forced, gatewaydns owns every field it applies and kubeadm's ConfigMap coredns is left alone.
// A later run of kubeadm's phase (what `kubeadm upgrade apply` runs too) refuses the gatewaydns
// image and changes nothing, as the README warns.
func TestDeployKubeadmImageSwap(t *testing.T) {
	kubeadm := testenv.ToolBinary(t, "kubeadm", "hack/build-test-binaries.sh")
	imageOnly := renderOverlay(t, "kubeadm-image")
	workload := renderOverlay(t, "workload")
	k := testenv.StartKubeAPIServer(t)
	if out, err := kubeadmCoreDNS(kubeadm, k); err != nil {
		t.Fatalf("kubeadm init phase addon coredns: %v\n%s", err, out)
	}
	initial := kubeadmState(t, k.Config)
	for id, o := range initial {
		// The ServiceAccount has no field besides its name: no manager is recorded for it.
		if got := managers(o); !slices.Equal(got, []string{"kubeadm/Update"}) && (id != "ServiceAccount kube-system/coredns" || len(got) != 0) {
			t.Errorf("kubeadm's %s: managers %v, want kubeadm/Update alone", id, got)
		}
	}
	stockImage := containerImage(t, initial[kubeadmDeployment])
	t.Logf("kubeadm's CoreDNS: image %s, its objects managed by kubeadm/Update", stockImage)

	// Step 1: the image only. The ClusterRole/Binding gatewaydns are new: no conflict.
	var deploy *unstructured.Unstructured
	for _, o := range imageOnly {
		if o.GetKind() == "Deployment" {
			deploy = o
			continue
		}
		if _, err := serverSideApply(t, k.Config, o, "gatewaydns", false); err != nil {
			t.Errorf("step 1: %s: %v", kustomize.ID(o), err)
		}
	}
	if deploy == nil {
		t.Fatal("the kubeadm-image overlay renders no Deployment")
	}
	_, err := serverSideApply(t, k.Config, deploy, "gatewaydns", false)
	const imageField = `.spec.template.spec.containers[name="coredns"].image`
	if c := conflicts(err); !apierrors.IsConflict(err) || len(c) != 1 || !strings.HasPrefix(c[0], imageField+": ") || !strings.Contains(c[0], `"kubeadm"`) {
		t.Fatalf("step 1 without --force-conflicts: %v (%q), want one conflict, %s with kubeadm", err, c, imageField)
	}
	// Step 1 as documented (deploy/README.md), and docs/migration.md's image-only step after it,
	// which changes nothing more: the same image field.
	runDocumented(t, k, "deploy/README.md", "kubectl kustomize deploy/overlays/kubeadm-image", []*unstructured.Unstructured{deploy})
	runDocumented(t, k, "docs/migration.md", "kubectl kustomize deploy/overlays/image-only", nil)
	ours := containerImage(t, deploy)
	afterImage := kubeadmState(t, k.Config)
	for id, o := range initial {
		if id != kubeadmDeployment && afterImage[id].GetResourceVersion() != o.GetResourceVersion() {
			t.Errorf("step 1 changed kubeadm's %s", id)
		}
	}
	// The Deployment: the image changed, nothing else; only the image's ownership moved.
	d0, d1 := initial[kubeadmDeployment], afterImage[kubeadmDeployment]
	want := d0.DeepCopy()
	cs, _, _ := unstructured.NestedSlice(want.Object, "spec", "template", "spec", "containers")
	cs[0].(map[string]any)["image"] = ours
	_ = unstructured.SetNestedSlice(want.Object, cs, "spec", "template", "spec", "containers")
	if !equalField(want, d1, "spec") {
		t.Errorf("step 1: the Deployment's spec changed beyond the image")
	}
	kubeadm0, kubeadm1 := managedBy(t, d0, "kubeadm", ""), managedBy(t, d1, "kubeadm", "")
	gatewaydns := managedBy(t, d1, "gatewaydns", metav1.ManagedFieldsOperationApply)
	image := fieldpath.NewSet(imagePath)
	if moved := kubeadm0.Difference(kubeadm1); !moved.Equals(image) {
		t.Errorf("step 1 took from kubeadm %v, want the image alone", moved)
	}
	if own := gatewaydns.Leaves().Difference(kubeadm1); !own.Equals(image) {
		t.Errorf("step 1: gatewaydns alone holds %v, want the image alone", own)
	}

	// Step 2, as a first try would apply it: a conflict with kubeadm on each field both set.
	conflicting := map[string][]string{}
	for _, o := range workload {
		_, err := serverSideApply(t, k.Config, o, "gatewaydns", false)
		switch {
		case apierrors.IsConflict(err):
			conflicting[kustomize.ID(o)] = conflicts(err)
		case err != nil:
			t.Errorf("step 2 without --force-conflicts: %s: %v", kustomize.ID(o), err)
		}
	}
	wantConflicting := []string{"ClusterRole.rbac.authorization.k8s.io /system:coredns", kubeadmDeployment, "Service kube-system/kube-dns"}
	if got := slices.Sorted(maps.Keys(conflicting)); !slices.Equal(got, wantConflicting) {
		t.Errorf("step 2 without --force-conflicts: conflicts on %v, want %v", got, wantConflicting)
	}
	for _, id := range slices.Sorted(maps.Keys(conflicting)) {
		for _, c := range conflicting[id] {
			if !strings.Contains(c, `"kubeadm"`) {
				t.Errorf("step 2: %s: a conflict with another manager than kubeadm: %s", id, c)
			}
		}
		t.Logf("step 2 without --force-conflicts: %s: %d conflicts:\n  %s", id, len(conflicting[id]), strings.Join(conflicting[id], "\n  "))
	}

	// Step 2 as documented: forced. Afterwards gatewaydns owns every field it applies (a plain
	// apply has nothing left to conflict on), and kubeadm's ConfigMap is as kubeadm made it.
	runDocumented(t, k, "deploy/README.md", "kubectl kustomize deploy/overlays/workload", workload)
	for _, o := range workload {
		if _, err := serverSideApply(t, k.Config, o, "gatewaydns", false); err != nil {
			t.Errorf("step 2, applied again without --force-conflicts: %s: %v", kustomize.ID(o), err)
		}
	}
	after := kubeadmState(t, k.Config)
	if cm := "ConfigMap kube-system/coredns"; after[cm].GetResourceVersion() != initial[cm].GetResourceVersion() {
		t.Errorf("step 2 changed kubeadm's %s", cm)
	}
	// The kubelets' clusterDNS points at kube-dns's address: it stays.
	svc := "Service kube-system/kube-dns"
	ip0, _, _ := unstructured.NestedString(initial[svc].Object, "spec", "clusterIP")
	if ip, _, _ := unstructured.NestedString(after[svc].Object, "spec", "clusterIP"); ip != ip0 || ip != "10.0.0.10" {
		t.Errorf("after step 2: kube-dns's clusterIP %s, want kubeadm's %s (10.0.0.10)", ip, ip0)
	}
	for _, id := range []string{"ClusterRoleBinding.rbac.authorization.k8s.io /system:coredns", "ServiceAccount kube-system/coredns"} {
		// The base adds its k8s-app label; what they grant and to whom stays.
		if !equalField(initial[id], after[id], "roleRef") || !equalField(initial[id], after[id], "subjects") {
			t.Errorf("step 2 changed what kubeadm's %s says", id)
		}
	}
	d := after[kubeadmDeployment]
	if img, cm := containerImage(t, d), mountedConfigMap(d); img != ours || cm == "coredns" || !strings.HasPrefix(cm, "coredns-") {
		t.Errorf("after step 2: image %s, ConfigMap %s; want %s and the overlay's coredns-<hash>", img, cm, ours)
	}
	for _, id := range wantConflicting {
		left := managedBy(t, after[id], "kubeadm", "").Leaves().Difference(managedBy(t, after[id], "gatewaydns", "").Leaves())
		t.Logf("after step 2: %s: kubeadm alone still holds %d fields (the overlay does not set them):\n%s", id, left.Size(), left)
	}

	// kubeadm upgrade apply runs the same add-on phase (EnsureDNSAddon). It reads the CoreDNS
	// version to migrate the Corefile from out of the Deployment's image tag, which is not a
	// CoreDNS version now: it fails before it writes anything (deploy/README.md says to skip it).
	before := kubeadmState(t, k.Config)
	out, err := kubeadmCoreDNS(kubeadm, k)
	if err == nil || !strings.Contains(out, "start version '"+strings.TrimPrefix(ours[strings.LastIndex(ours, ":")+1:], "v")+"' not supported") {
		t.Errorf("kubeadm's CoreDNS phase over the gatewaydns image: %v\n%s\nwant it to refuse the image's tag as a CoreDNS version", err, out)
	}
	for id, o := range kubeadmState(t, k.Config) {
		if o.GetResourceVersion() != before[id].GetResourceVersion() {
			t.Errorf("kubeadm's refused phase changed %s", id)
		}
	}
}

// equalField tells whether a and b hold the same value at the top-level field.
func equalField(a, b *unstructured.Unstructured, field string) bool {
	return reflect.DeepEqual(a.Object[field], b.Object[field])
}
