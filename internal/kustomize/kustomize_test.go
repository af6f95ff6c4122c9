package kustomize

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func find(t *testing.T, objs []*unstructured.Unstructured, id string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if ID(o) == id {
			return o
		}
	}
	t.Fatalf("no %s among the rendered objects", id)
	return nil
}

// What each supported feature does to testdata/overlay, pinned, so that the renderer is
// checked where kubectl is not installed. The ConfigMap's hash is kubectl kustomize v5.5.0's.
func TestRenderAppliesEachFeature(t *testing.T) {
	objs, err := Render("testdata/overlay")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, o := range objs {
		ids = append(ids, ID(o))
	}
	// Resources in order (a directory's in its own order), then the generated objects.
	want := []string{"Deployment.apps demo/app", "Service demo/app", "ServiceAccount demo/app",
		"ConfigMap demo/app-config-7ccg94k29t", "Secret demo/app-secret"}
	if strings.Join(ids, ", ") != strings.Join(want, ", ") {
		t.Errorf("objects %v, want %v", ids, want)
	}

	d := find(t, objs, "Deployment.apps demo/app")
	if n, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "replicas"); fmt.Sprint(n) != "3" {
		t.Errorf("replicas %v, want the patch's 3", n)
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	images := map[string]string{}
	for _, c := range containers {
		c := c.(map[string]any)
		images[c["name"].(string)] = c["image"].(string)
		if c["name"] == "main" {
			// A strategic merge: the patch's env is added, the base's args stay.
			if _, ok := c["env"]; !ok || c["args"] == nil {
				t.Errorf("container main after the patch: %v", c)
			}
		}
	}
	for name, want := range map[string]string{
		"main":    "registry.example.com/demo/main:v1.2.3",
		"sidecar": "docker.io/library/busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000",
		"pinned":  "registry.example.com/tools/pinned:old", // newName only: the tag stays
	} {
		if images[name] != want {
			t.Errorf("image of %s %q, want %q", name, images[name], want)
		}
	}
	vols, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	if cm, _, _ := unstructured.NestedString(vols[0].(map[string]any), "configMap", "name"); cm != "app-config-7ccg94k29t" {
		t.Errorf("the Deployment mounts ConfigMap %q, want the generated name", cm)
	}

	cm := find(t, objs, "ConfigMap demo/app-config-7ccg94k29t")
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "Corefile"); got != ".:53 {\n    whoami\n}\n" {
		t.Errorf("ConfigMap data %q", got)
	}
	if cm.GetLabels()["app"] != "demo" {
		t.Errorf("ConfigMap labels %v", cm.GetLabels())
	}
	secret := find(t, objs, "Secret demo/app-secret")
	key, _ := os.ReadFile("testdata/overlay/secret/key.txt")
	if got, _, _ := unstructured.NestedString(secret.Object, "data", "key.txt"); got != base64.StdEncoding.EncodeToString(key) {
		t.Errorf("Secret data %q, want the file's bytes in base64", got)
	}
}

// Render and kubectl's kustomize give the same objects, for the test's overlay and for every
// kustomization of deploy/.
func TestRenderIsKubectlKustomizes(t *testing.T) {
	dirs := []string{"testdata/overlay"}
	overlays, _ := filepath.Glob("../../deploy/overlays/*")
	dirs = append(dirs, overlays...)
	if len(overlays) == 0 {
		t.Fatal("no overlays under deploy/overlays")
	}
	for _, dir := range dirs {
		theirs, err := Kubectl(dir)
		if errors.Is(err, ErrNoKubectl) {
			t.Skip("kubectl is not installed: TestRenderAppliesEachFeature checks the renderer alone")
		}
		if err != nil {
			t.Fatal(err)
		}
		mine, err := Render(dir)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, d := range Diff(mine, theirs) {
			t.Errorf("%s: %s", dir, d)
		}
	}
}

// A feature the renderer does not have is an error, not a silently different rendering.
func TestRenderRefusesWhatItDoesNotSupport(t *testing.T) {
	for _, tc := range []struct {
		name, kustomization string
		want                string
	}{
		{"another field", "namePrefix: x-\n", "namePrefix"},
		{"an inline patch", "patches:\n  - patch: |\n      kind: Deployment\n", `unknown field "patch"`},
		{"a hashed Secret", "secretGenerator:\n  - name: s\n    files: [data.txt]\n", "disableNameSuffixHash"},
		{"key=file", "configMapGenerator:\n  - name: c\n    files: [k=data.txt]\n", "key=file"},
		{"an object twice", "resources: [obj.yaml, obj.yaml]\n", "defined twice"},
		{"a patch of nothing", "resources: [obj.yaml]\npatches:\n  - path: other.yaml\n", "no ConfigMap /b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{
				"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + tc.kustomization,
				"data.txt":           "x",
				"obj.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
				"other.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n",
			}
			for name, content := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Render(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Render: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
