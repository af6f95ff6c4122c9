package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The external-dns gatewaydns migrates from: hack/build-external-dns.sh builds this version
// (TestExternalDNSVersionMatchesBuildScript keeps the two equal), and its module source holds
// the DNSEndpoint CRD and the list of --source values the tests compare against.
const (
	ExternalDNSModule  = "sigs.k8s.io/external-dns"
	ExternalDNSVersion = "v0.21.0"
)

// EnvExternalDNSDir, when set, names the external-dns module directory, instead of finding it
// in the module cache.
const EnvExternalDNSDir = "GATEWAYDNS_EXTERNAL_DNS_DIR"

// DNSEndpointCRDPath is the DNSEndpoint CRD's file in the external-dns module.
const DNSEndpointCRDPath = "config/crd/standard/dnsendpoints.externaldns.k8s.io.yaml"

var (
	edDirOnce sync.Once
	edDir     string
	edDirErr  error
)

// ExternalDNSModuleDir returns the source directory of external-dns ExternalDNSVersion:
// $GATEWAYDNS_EXTERNAL_DNS_DIR, else the module cache (make test-binaries leaves it there when
// it builds bin/external-dns), else what `go mod download` fetches.
func ExternalDNSModuleDir() (string, error) {
	edDirOnce.Do(func() { edDir, edDirErr = findExternalDNSDir() })
	return edDir, edDirErr
}

func findExternalDNSDir() (string, error) {
	if d := os.Getenv(EnvExternalDNSDir); d != "" {
		if _, err := os.Stat(filepath.Join(d, DNSEndpointCRDPath)); err != nil {
			return "", fmt.Errorf("$%s=%s is not the external-dns module source: %w", EnvExternalDNSDir, d, err)
		}
		return d, nil
	}
	module := ExternalDNSModule + "@" + ExternalDNSVersion
	var errs []error
	if modcache := goModCache(); modcache != "" {
		d := filepath.Join(modcache, escapeModulePath(ExternalDNSModule)+"@"+ExternalDNSVersion)
		if _, err := os.Stat(filepath.Join(d, DNSEndpointCRDPath)); err == nil {
			return d, nil
		}
		errs = append(errs, fmt.Errorf("%s not in the module cache (%s)", module, d))
	}
	root, err := RepoRoot()
	if err == nil {
		var d string
		if d, err = downloadModule(root, module); err == nil {
			return d, nil
		}
	}
	errs = append(errs, err)
	return "", fmt.Errorf("the external-dns module source (%s) is needed for the DNSEndpoint CRD and external-dns's "+
		"--source list; `make test-binaries` (hack/build-external-dns.sh) fetches it, or set $%s to its directory: %w",
		module, EnvExternalDNSDir, errors.Join(errs...))
}

// DNSEndpointCRDs returns external-dns's DNSEndpoint CRD, read from the external-dns module.
func DNSEndpointCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	dir, err := ExternalDNSModuleDir()
	if err != nil {
		return nil, err
	}
	crds, err := readCRDFile(filepath.Join(dir, DNSEndpointCRDPath))
	if err == nil && len(crds) != 1 {
		err = fmt.Errorf("%s holds %d CRDs, want the DNSEndpoint one", DNSEndpointCRDPath, len(crds))
	}
	return crds, err
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
