package testenv

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// The build script and the module the tests read must be the same external-dns: the CRD and
// the --source list would otherwise describe another binary than the one the tests run.
func TestExternalDNSVersionMatchesBuildScript(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "hack", "build-external-dns.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"MODULE": ExternalDNSModule, "VERSION": ExternalDNSVersion} {
		got := "(not set)"
		if m := regexp.MustCompile(`(?m)^` + name + `="([^"]*)"$`).FindSubmatch(script); m != nil {
			got = string(m[1])
		}
		if got != want {
			t.Errorf("hack/build-external-dns.sh sets %s %s, testenv has %s", name, got, want)
		}
	}
}

// The DNSEndpoint CRD comes from the external-dns module: one CRD, served at v1alpha1 with a
// status subresource (the observedGeneration write-back needs it).
func TestDNSEndpointCRDFromTheModule(t *testing.T) {
	crds, err := DNSEndpointCRDs()
	if err != nil {
		t.Fatal(err)
	}
	crd := crds[0]
	if crd.Name != "dnsendpoints.externaldns.k8s.io" || crd.Spec.Names.Kind != "DNSEndpoint" {
		t.Fatalf("read %s (kind %s)", crd.Name, crd.Spec.Names.Kind)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == "v1alpha1" && v.Served && v.Subresources != nil && v.Subresources.Status != nil {
			return
		}
	}
	t.Errorf("no served v1alpha1 with a status subresource in %+v", crd.Spec.Versions)
}
