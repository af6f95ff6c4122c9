package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/gatewaydns/gatewaydns/internal/kustomize"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// serverSideApply applies o as `kubectl apply --server-side --field-manager=manager
// [--force-conflicts]` does and returns what the API server made of it.
func serverSideApply(t *testing.T, cfg *rest.Config, o *unstructured.Unstructured, manager string, force bool) (*unstructured.Unstructured, error) {
	t.Helper()
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	gvk := o.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s: %v", kustomize.ID(o), err)
	}
	var ri dynamic.ResourceInterface = dynamic.NewForConfigOrDie(cfg).Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = dynamic.NewForConfigOrDie(cfg).Resource(m.Resource).Namespace(o.GetNamespace())
	}
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

// kubeadmCoreDNS is a kubeadm-like CoreDNS: the base's Deployment with the stock image and
// kubeadm's ConfigMap coredns, as `kubeadm init` applies them (field manager "kubeadm").
func kubeadmCoreDNS(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kustomize.ReadYAMLObjects(filepath.Join(root, "deploy", "base", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d := objs[0]
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	cs[0].(map[string]any)["image"] = "registry.k8s.io/coredns/coredns:v1.12.0"
	_ = unstructured.SetNestedSlice(d.Object, cs, "spec", "template", "spec", "containers")
	stock, err := os.ReadFile(filepath.Join(root, "corefile.d", "cluster-dns.Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "coredns", "namespace": "kube-system"},
		"data":     map[string]any{"Corefile": string(stock)},
	}}
	return []*unstructured.Unstructured{cm, d}
}

// TestDeployKubeadmImageSwap applies deploy/overlays/kubeadm-image over a kubeadm-like CoreDNS
// on a real kube-apiserver with server-side apply: without --force-conflicts the only conflict
// is kubeadm's image field; with it, that one field moves to gatewaydns and every other field
// (replicas, resources, the ConfigMap mounted) stays kubeadm's, as deploy/README.md says.
func TestDeployKubeadmImageSwap(t *testing.T) {
	objs := renderOverlay(t, "kubeadm-image")
	k := testenv.StartKubeAPIServer(t)
	for _, o := range kubeadmCoreDNS(t) {
		if _, err := serverSideApply(t, k.Config, o, "kubeadm", false); err != nil {
			t.Fatalf("kubeadm's %s: %v", kustomize.ID(o), err)
		}
	}

	var deploy *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			deploy = o
			continue
		}
		// The RBAC is new: no conflict, no force needed.
		if _, err := serverSideApply(t, k.Config, o, "gatewaydns", false); err != nil {
			t.Errorf("%s: %v", kustomize.ID(o), err)
		}
	}
	if deploy == nil {
		t.Fatal("the overlay renders no Deployment")
	}
	_, err := serverSideApply(t, k.Config, deploy, "gatewaydns", false)
	if !apierrors.IsConflict(err) {
		t.Fatalf("applying the image over kubeadm's without --force-conflicts: %v, want a conflict", err)
	}
	var causes []string
	if st, ok := err.(apierrors.APIStatus); ok && st.Status().Details != nil {
		for _, c := range st.Status().Details.Causes {
			causes = append(causes, c.Field+": "+c.Message)
		}
	}
	const imageField = `.spec.template.spec.containers[name="coredns"].image`
	if len(causes) != 1 || !strings.HasPrefix(causes[0], imageField+": ") || !strings.Contains(causes[0], `"kubeadm"`) {
		t.Errorf("conflicts %q, want exactly %s with kubeadm", causes, imageField)
	}
	t.Logf("without --force-conflicts: %v", causes)

	got, err := serverSideApply(t, k.Config, deploy, "gatewaydns", true)
	if err != nil {
		t.Fatalf("with --force-conflicts: %v", err)
	}
	cs, _, _ := unstructured.NestedSlice(got.Object, "spec", "template", "spec", "containers")
	if img := cs[0].(map[string]any)["image"]; img != "registry.example.com/platform/gatewaydns-coredns:v0.1.0" {
		t.Errorf("image after the swap: %v", img)
	}
	// Everything else is still kubeadm's: its values are there, and it still manages them.
	if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); r != 2 {
		t.Errorf("replicas %d, want kubeadm's 2", r)
	}
	vols, _, _ := unstructured.NestedSlice(got.Object, "spec", "template", "spec", "volumes")
	if cmName, _, _ := unstructured.NestedString(vols[0].(map[string]any), "configMap", "name"); cmName != "coredns" {
		t.Errorf("mounted ConfigMap %q, want kubeadm's coredns", cmName)
	}
	for _, mf := range got.GetManagedFields() {
		fields := string(mf.FieldsV1.Raw)
		switch mf.Manager {
		case "gatewaydns":
			if strings.Contains(fields, `"f:replicas"`) || strings.Contains(fields, `"f:resources"`) || !strings.Contains(fields, `"f:image"`) {
				t.Errorf("gatewaydns manages %s, want the image only", fields)
			}
		case "kubeadm":
			if strings.Contains(fields, `"f:image"`) || !strings.Contains(fields, `"f:replicas"`) {
				t.Errorf("kubeadm manages %s, want everything but the image", fields)
			}
		}
	}

	// Step two: the whole workload overlay, forced. It takes kubeadm's Deployment fields, but
	// mounts a ConfigMap of its own: kubeadm's ConfigMap coredns keeps the stock Corefile, for
	// any pod of the old ReplicaSet that restarts during the rollout.
	workload := renderOverlay(t, "workload")
	for _, o := range workload {
		if _, err := serverSideApply(t, k.Config, o, "gatewaydns", true); err != nil {
			t.Errorf("workload overlay, forced: %s: %v", kustomize.ID(o), err)
		}
	}
	for _, o := range kubeadmCoreDNS(t) {
		if o.GetKind() != "ConfigMap" {
			continue
		}
		cm, err := dynamic.NewForConfigOrDie(k.Config).Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).
			Namespace("kube-system").Get(context.Background(), "coredns", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, _, _ := unstructured.NestedString(cm.Object, "data", "Corefile")
		want, _, _ := unstructured.NestedString(o.Object, "data", "Corefile")
		if got != want {
			t.Errorf("kubeadm's ConfigMap coredns changed by the workload overlay:\n%s", got)
		}
	}
}
