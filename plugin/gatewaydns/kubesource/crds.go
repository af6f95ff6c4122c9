package kubesource

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdServesVia reads a CRD with dyn and reports whether it serves a version.
func crdServesVia(dyn dynamic.Interface) func(ctx context.Context, name, version string) (bool, error) {
	return func(ctx context.Context, name, version string) (bool, error) {
		crd, err := dyn.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			m, ok := v.(map[string]any)
			if !ok {
				continue
			}
			if n, _ := m["name"].(string); n == version {
				served, _ := m["served"].(bool)
				return served, nil
			}
		}
		return false, nil
	}
}
