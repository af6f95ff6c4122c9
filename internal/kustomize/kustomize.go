// Package kustomize renders the kustomizations of deploy/ as kustomize would, for the few
// kustomize features they use: kustomize itself is not a dependency of this module. Anything
// else is an error, so the overlays cannot drift into features this renderer would get wrong;
// its tests compare it with kubectl's built-in kustomize when kubectl is installed.
package kustomize

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

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

// NameHash is kustomize's name suffix of a generated ConfigMap (sigs.k8s.io/kustomize/api/hasher):
// the first 10 hex digits of the SHA-256 of {"data","kind","name"} as JSON, with the digits and
// letters that could spell words replaced. kustomize v5 hashes the object before it is named,
// so "name" is empty (checked against kubectl kustomize by TestRenderIsKubectlKustomizes).
func NameHash(data map[string]any) (string, error) {
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

// ID names an object as kustomize does, to find it and to tell duplicates: group and kind,
// namespace and name.
func ID(o *unstructured.Unstructured) string {
	return o.GroupVersionKind().GroupKind().String() + " " + o.GetNamespace() + "/" + o.GetName()
}

// ReadYAMLObjects reads the documents of a multi-document YAML file.
func ReadYAMLObjects(path string) ([]*unstructured.Unstructured, error) {
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

// Render renders dir as kustomize would, for the features kustomization supports:
// resources (files and directories, in order), configMapGenerator and secretGenerator from
// files without name hashes, and strategic-merge patches by path. Anything else is an error, so
// the overlays cannot drift into features this renderer would silently get wrong.
func Render(dir string) ([]*unstructured.Unstructured, error) {
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
			got, err = Render(p)
		} else {
			got, err = ReadYAMLObjects(p)
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
			o.Object["type"] = cmp.Or(g.Type, "Opaque")
		}
		if !g.Options.DisableNameSuffixHash {
			h, err := NameHash(d)
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
		if seen[ID(o)] {
			return nil, fmt.Errorf("%s: %s defined twice", dir, ID(o))
		}
		seen[ID(o)] = true
	}
	for _, p := range k.Patches {
		if p.Path == "" {
			return nil, fmt.Errorf("%s: only patches by path are supported", dir)
		}
		patches, err := ReadYAMLObjects(filepath.Join(dir, p.Path))
		if err != nil {
			return nil, err
		}
		for _, patch := range patches {
			i := slices.IndexFunc(objs, func(o *unstructured.Unstructured) bool { return ID(o) == ID(patch) })
			if i < 0 {
				return nil, fmt.Errorf("%s: patch %s: no %s", dir, p.Path, ID(patch))
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
				n := cmp.Or(im.NewName, name)
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
