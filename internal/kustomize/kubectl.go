package kustomize

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// ErrNoKubectl is Kubectl's error when kubectl is not on PATH.
var ErrNoKubectl = errors.New("kubectl not found on PATH")

// Kubectl renders dir with kubectl's built-in kustomize, the reference Render is held to.
func Kubectl(dir string) ([]*unstructured.Unstructured, error) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		return nil, ErrNoKubectl
	}
	out, err := exec.Command(kubectl, "kustomize", dir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("kubectl kustomize %s: %w\n%s", dir, err, ee.Stderr)
		}
		return nil, fmt.Errorf("kubectl kustomize %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp("", "kustomize")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	f := filepath.Join(tmp, "rendered.yaml")
	if err := os.WriteFile(f, out, 0o600); err != nil {
		return nil, err
	}
	return ReadYAMLObjects(f)
}

// Diff says how two renderings differ, one line per object (none when they hold the same
// objects). A Secret's data is compared as bytes: kustomize wraps base64 at 70 columns.
func Diff(mine, theirs []*unstructured.Unstructured) []string {
	a, b := comparable(mine), comparable(theirs)
	var out []string
	for _, id := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[id]; !ok {
			out = append(out, fmt.Sprintf("%s: only in theirs", id))
			continue
		}
		if !reflect.DeepEqual(a[id], b[id]) {
			ya, _ := yaml.Marshal(a[id])
			yb, _ := yaml.Marshal(b[id])
			out = append(out, fmt.Sprintf("%s differs:\nmine:\n%s\ntheirs:\n%s", id, ya, yb))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(a)) {
		if _, ok := b[id]; !ok {
			out = append(out, fmt.Sprintf("%s: only in mine", id))
		}
	}
	return out
}

// comparable maps objects by ID to their JSON form, numbers and all as JSON reads them.
func comparable(objs []*unstructured.Unstructured) map[string]any {
	m := map[string]any{}
	for _, o := range objs {
		o = o.DeepCopy()
		if o.GetKind() == "Secret" {
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			for k, v := range data {
				data[k] = strings.Join(strings.Fields(v), "")
			}
			_ = unstructured.SetNestedStringMap(o.Object, data, "data")
		}
		b, _ := json.Marshal(o.Object)
		var v any
		_ = json.Unmarshal(b, &v)
		m[ID(o)] = v
	}
	return m
}
