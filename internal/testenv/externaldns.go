package testenv

import (
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// DNSEndpointCRDDir is the directory, below the repository root, of external-dns's DNSEndpoint
// CRD (v0.21.0), kept as test data.
const DNSEndpointCRDDir = "internal/testenv/testdata/externaldns"

// DNSEndpointCRDs returns external-dns's DNSEndpoint CRD, for an API server started elsewhere
// (make demo).
func DNSEndpointCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	return readCRDDir(filepath.Join(root, DNSEndpointCRDDir))
}

// InstallDNSEndpointCRD installs external-dns's DNSEndpoint CRD
// (externaldns.k8s.io/v1alpha1 dnsendpoints, with its status subresource) and waits until the
// API server serves it.
func (k *Kube) InstallDNSEndpointCRD(t testing.TB) {
	t.Helper()
	crds, err := DNSEndpointCRDs()
	if err != nil {
		t.Fatalf("testenv: reading the DNSEndpoint CRD: %v", err)
	}
	if _, err := envtest.InstallCRDs(k.Config, envtest.CRDInstallOptions{
		CRDs:    []*apiextensionsv1.CustomResourceDefinition(crds),
		MaxTime: 30 * time.Second,
	}); err != nil {
		t.Fatalf("testenv: installing the DNSEndpoint CRD: %v", err)
	}
}
