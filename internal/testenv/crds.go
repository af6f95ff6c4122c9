package testenv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"unicode"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// CRDChannel names a Gateway API release channel, a directory under the
// gateway-api module's config/crd.
type CRDChannel string

const (
	// CRDStandard is config/crd/standard. In gateway-api v1.6 it has
	// GatewayClass, Gateway, HTTPRoute, GRPCRoute, TLSRoute, TCPRoute,
	// UDPRoute, ReferenceGrant, BackendTLSPolicy and ListenerSet; TLSRoute,
	// TCPRoute and UDPRoute serve only v1 there.
	CRDStandard CRDChannel = "standard"
	// CRDExperimental is config/crd/experimental: the same kinds serving
	// their alpha versions too (TLSRoute v1alpha2/v1alpha3, TCPRoute and
	// UDPRoute v1alpha2, ...) plus the x-k8s.io kinds (XBackend, XMesh, ...).
	CRDExperimental CRDChannel = "experimental"
)

// EnvGatewayAPIDir, when set, names the gateway-api module directory (the
// one holding config/crd), instead of finding it in the module cache.
const EnvGatewayAPIDir = "GATEWAYDNS_GATEWAY_API_DIR"

const gatewayAPIModule = "sigs.k8s.io/gateway-api"

var (
	gwDirOnce sync.Once
	gwDir     string
	gwDirErr  error
)

// GatewayAPIModuleDir returns the directory of the sigs.k8s.io/gateway-api
// module the tests are built with: $GATEWAYDNS_GATEWAY_API_DIR, else the
// version recorded in the test binary's build info looked up in GOMODCACHE,
// else `go list -m` in the repository (downloading the module if needed).
func GatewayAPIModuleDir() (string, error) {
	gwDirOnce.Do(func() { gwDir, gwDirErr = findGatewayAPIDir() })
	return gwDir, gwDirErr
}

func findGatewayAPIDir() (string, error) {
	if d := os.Getenv(EnvGatewayAPIDir); d != "" {
		return d, nil
	}
	var errs []error
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path != gatewayAPIModule {
				continue
			}
			if m.Replace != nil {
				m = m.Replace
			}
			if filepath.IsAbs(m.Path) || strings.HasPrefix(m.Path, ".") {
				return m.Path, nil // replaced by a local directory
			}
			if modcache := goModCache(); modcache != "" {
				d := filepath.Join(modcache, escapeModulePath(m.Path)+"@"+m.Version)
				if _, err := os.Stat(filepath.Join(d, "config", "crd")); err == nil {
					return d, nil
				}
				errs = append(errs, fmt.Errorf("%s not in the module cache", d))
			}
		}
	}
	root, err := RepoRoot()
	if err != nil {
		return "", errors.Join(append(errs, err)...)
	}
	d, err := downloadModule(root, gatewayAPIModule)
	if err != nil {
		return "", errors.Join(append(errs, err)...)
	}
	return d, nil
}

// downloadModule runs `go mod download -json` on module (a path, or path@version) in dir and
// returns the module's directory: go mod download prints it, fetching the module if needed.
// A failed download exits non-zero and says why in the JSON's Error field.
func downloadModule(dir, module string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var dl struct{ Dir, Error string }
	if err := yaml.Unmarshal(out, &dl); err != nil && runErr == nil {
		return "", fmt.Errorf("go mod download -json %s: %w", module, err)
	}
	if runErr != nil || dl.Dir == "" {
		return "", fmt.Errorf("go mod download -json %s: %v: %s", module, runErr, strings.TrimSpace(dl.Error+" "+stderr.String()))
	}
	return dl.Dir, nil
}

func goModCache() string {
	if d := os.Getenv("GOMODCACHE"); d != "" {
		return d
	}
	if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); d != "" {
			return d
		}
	}
	if gp := os.Getenv("GOPATH"); gp != "" {
		return filepath.Join(filepath.SplitList(gp)[0], "pkg", "mod")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, "go", "pkg", "mod")
	}
	return ""
}

// escapeModulePath applies the module cache's case escaping ("A" -> "!a").
func escapeModulePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

var (
	crdCacheMu sync.Mutex
	crdCache   = map[CRDChannel][]*apiextensionsv1.CustomResourceDefinition{}
)

// GatewayAPICRDs returns the CustomResourceDefinitions of a channel, sorted
// by kind. Other objects in the files (the safe-upgrades
// ValidatingAdmissionPolicy) are left out. Callers get fresh copies.
func GatewayAPICRDs(channel CRDChannel) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	crdCacheMu.Lock()
	defer crdCacheMu.Unlock()
	crds, ok := crdCache[channel]
	if !ok {
		mod, err := GatewayAPIModuleDir()
		if err != nil {
			return nil, fmt.Errorf("finding the %s module: %w", gatewayAPIModule, err)
		}
		crds, err = readCRDDir(filepath.Join(mod, "config", "crd", string(channel)))
		if err != nil {
			return nil, err
		}
		crdCache[channel] = crds
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, len(crds))
	for i, c := range crds {
		out[i] = c.DeepCopy()
	}
	return out, nil
}

func readCRDDir(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRD files in %s", dir)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		fc, err := readCRDFile(f)
		if err != nil {
			return nil, err
		}
		crds = append(crds, fc...)
	}
	sort.Slice(crds, func(i, j int) bool { return crds[i].Spec.Names.Kind < crds[j].Spec.Names.Kind })
	return crds, nil
}

// readCRDFile returns the CustomResourceDefinitions among the YAML documents of file f.
func readCRDFile(f string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(f)
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return crds, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if meta.Kind != "CustomResourceDefinition" || meta.APIVersion != "apiextensions.k8s.io/v1" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(doc, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		crds = append(crds, crd)
	}
}

// crdMatches reports whether name is the CRD's kind, plural or full name
// (case-insensitive): "TLSRoute", "tlsroutes", "tlsroutes.gateway.networking.k8s.io".
func crdMatches(crd *apiextensionsv1.CustomResourceDefinition, name string) bool {
	return strings.EqualFold(name, crd.Spec.Names.Kind) ||
		strings.EqualFold(name, crd.Spec.Names.Plural) ||
		strings.EqualFold(name, crd.Name)
}

func crdKinds(crds []*apiextensionsv1.CustomResourceDefinition) []string {
	kinds := make([]string, len(crds))
	for i, c := range crds {
		kinds[i] = c.Spec.Names.Kind
	}
	return kinds
}
