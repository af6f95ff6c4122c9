package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sys/unix"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// testOptions builds from a small stand-in binary for both platforms: the shape of the image
// does not depend on what the binary is, and compressing the real one (80 MB) in-process under
// the race detector takes minutes. The real binary goes through the real tool (runImageTool).
func testOptions(t *testing.T) Options {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "coredns")
	if err := os.WriteFile(bin, bytes.Repeat([]byte("not really coredns\n"), 1000), 0o755); err != nil {
		t.Fatal(err)
	}
	certs := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(certs, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return Options{
		Platforms: []Platform{{"linux", "amd64", bin}, {"linux", "arm64", bin}},
		CACerts:   certs,
		Created:   time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC),
		Source:    "https://github.com/gatewaydns/gatewaydns", Revision: "0123abc", Version: "v0.1.0-test",
		Licenses: "NOASSERTION",
	}
}

// corednsBinary is the binary `make build` makes (testenv.CoreDNSBinary).
func corednsBinary(t *testing.T) string { return testenv.CoreDNSBinary(t) }

var (
	toolOnce sync.Once
	toolPath string
	toolErr  error
)

// built is what one run of hack/image left, for this machine's platform.
type built struct {
	Dir, Layout, Tarball, SBOM string
	Index                      v1.Hash
}

// runImageTool runs hack/image, the tool `make image` runs (built once, without the race
// detector), on bin for this machine's platform, into a directory of the test's.
func runImageTool(t *testing.T, bin, ref string) built {
	t.Helper()
	return runImageToolInto(t, bin, ref, t.TempDir())
}

var (
	sharedOnce  sync.Once
	sharedDir   string
	sharedBuilt built
	sharedErr   error
)

// sharedImage is one run of hack/image on the real binary that the tests which only read its
// output share (each run compresses 80 MB): tagged with this process's id, so that a podman
// store shared with other test runs keeps them apart.
func sharedImage(t *testing.T) built {
	t.Helper()
	bin := corednsBinary(t)
	sharedOnce.Do(func() {
		if sharedDir, sharedErr = os.MkdirTemp("", "gatewaydns-image"); sharedErr != nil {
			return
		}
		// A failure inside is reported by the test that asked first; the others see sharedErr.
		sharedErr = fmt.Errorf("building the shared image failed in an earlier test")
		sharedBuilt = runImageToolInto(t, bin, fmt.Sprintf("gatewaydns-coredns:test-%d", os.Getpid()), sharedDir)
		sharedErr = nil
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedBuilt
}

func runImageToolInto(t *testing.T, bin, ref, dir string) built {
	t.Helper()
	toolOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gatewaydns-hack-image")
		if err != nil {
			toolErr = err
			return
		}
		toolPath = filepath.Join(dir, "image")
		if out, err := exec.Command("go", "build", "-o", toolPath, "../../hack/image").CombinedOutput(); err != nil {
			toolErr = fmt.Errorf("go build hack/image: %v\n%s", err, out)
		}
	})
	if toolErr != nil {
		t.Fatal(toolErr)
	}
	plat := "linux/" + runtime.GOARCH
	cmd := exec.Command(toolPath, "-name", ref, "-out", dir, "-created", "1795780800",
		"-revision", "0123abc", "-version", "v0.1.0-test", "-licenses", "NOASSERTION",
		"-source", "https://github.com/gatewaydns/gatewaydns", "-binary", plat+"="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/image: %v\n%s", err, out)
	}
	lp, err := layout.FromPath(filepath.Join(dir, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := top.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		t.Fatalf("oci/index.json: %+v, %v; want the one index", im, err)
	}
	base := "linux-" + runtime.GOARCH
	return built{
		Dir: dir, Layout: filepath.Join(dir, "oci"), Index: im.Manifests[0].Digest,
		Tarball: filepath.Join(dir, "image-"+base+".tar"), SBOM: filepath.Join(dir, "sbom-"+base+".spdx.json"),
	}
}

// layerFiles reads the only layer of img: every header by name.
func layerFiles(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want exactly one", len(layers), err)
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("layer media type %s, want %s", mt, types.OCILayer)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
	}
}

func TestTheIndexHoldsOneImagePerPlatformInTheStockCoreDNSShape(t *testing.T) {
	o := testOptions(t)
	idx, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", im.MediaType, types.OCIImageIndex)
	}
	var plats []string
	for _, d := range im.Manifests {
		plats = append(plats, d.Platform.OS+"/"+d.Platform.Architecture)
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
			t.Errorf("%s: manifest media type %s", d.Platform, mt)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS+"/"+cf.Architecture != d.Platform.OS+"/"+d.Platform.Architecture {
			t.Errorf("config says %s/%s, the index %s", cf.OS, cf.Architecture, d.Platform)
		}
		c := cf.Config
		if c.User != "65532:65532" || c.WorkingDir != "/" || !slices.Equal(c.Entrypoint, []string{"/coredns"}) || len(c.Cmd) != 0 {
			t.Errorf("user %q workdir %q entrypoint %q cmd %q; want the stock image's 65532:65532, /, [/coredns], none",
				c.User, c.WorkingDir, c.Entrypoint, c.Cmd)
		}
		if _, tcp := c.ExposedPorts["53/tcp"]; !tcp || len(c.ExposedPorts) != 2 {
			t.Errorf("exposed ports %v, want 53/tcp and 53/udp", c.ExposedPorts)
		} else if _, udp := c.ExposedPorts["53/udp"]; !udp {
			t.Errorf("exposed ports %v, want 53/tcp and 53/udp", c.ExposedPorts)
		}
		for k, want := range map[string]string{
			"org.opencontainers.image.source": o.Source, "org.opencontainers.image.revision": o.Revision,
			"org.opencontainers.image.version": o.Version, "org.opencontainers.image.licenses": o.Licenses,
		} {
			if got := c.Labels[k]; got != want {
				t.Errorf("label %s = %q, want %q", k, got, want)
			}
		}
		if !cf.Created.Time.Equal(o.Created) {
			t.Errorf("created %v, want the given %v", cf.Created, o.Created)
		}
		files := layerFiles(t, img)
		bin := files["coredns"]
		if bin == nil || bin.Mode != 0o755 || bin.Uid != 0 || bin.PAXRecords[PAXCapability] != string(NetBindServiceCapability()) {
			t.Errorf("/coredns: %+v; want root-owned 0755 with cap_net_bind_service in %s", bin, PAXCapability)
		}
		for _, name := range []string{"etc/ssl/certs/ca-certificates.crt", "etc/passwd", "etc/group", "tmp/", "home/nonroot/"} {
			h := files[name]
			if h == nil {
				t.Errorf("no %s in the layer", name)
				continue
			}
			if !h.ModTime.Equal(o.Created) {
				t.Errorf("%s: mtime %v, want the given %v", name, h.ModTime, o.Created)
			}
		}
		if h := files["tmp/"]; h != nil && h.Mode != 0o1777 {
			t.Errorf("/tmp mode %o, want 1777", h.Mode)
		}
	}
	if !slices.Equal(plats, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", plats)
	}
}

// The capability bytes are what setcap itself writes: compared on a real file with the real
// tool, so the image's /coredns gets exactly what the Dockerfile's `RUN setcap` gives.
func TestTheCapabilityIsWhatSetcapWrites(t *testing.T) {
	setcap, err := exec.LookPath("setcap")
	if err != nil {
		t.Skip("setcap (libcap2-bin) is not installed")
	}
	if os.Geteuid() != 0 {
		t.Skip("setcap needs root")
	}
	f := filepath.Join(t.TempDir(), "coredns")
	if err := os.WriteFile(f, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(setcap, "cap_net_bind_service=+ep", f).CombinedOutput(); err != nil {
		t.Fatalf("setcap: %v: %s", err, out)
	}
	buf := make([]byte, 64)
	n, err := unix.Getxattr(f, CapabilityXattr, buf)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := buf[:n], NetBindServiceCapability(); !bytes.Equal(got, want) {
		t.Errorf("setcap wrote % x, the image carries % x", got, want)
	}
}

// `make image` twice from the same commit: the tool run twice on the real binary gives the same
// index, tarball and SBOM, byte for byte.
func TestTheSameInputsGiveTheSameDigestsAndFiles(t *testing.T) {
	a := sharedImage(t)
	b := runImageTool(t, corednsBinary(t), fmt.Sprintf("gatewaydns-coredns:test-%d", os.Getpid()))
	if a.Index != b.Index {
		t.Errorf("index digest %s then %s from the same inputs", a.Index, b.Index)
	}
	for _, pair := range [][2]string{{a.Tarball, b.Tarball}, {a.SBOM, b.SBOM}} {
		x, err1 := os.ReadFile(pair[0])
		y, err2 := os.ReadFile(pair[1])
		if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
			t.Errorf("%s and %s differ (%v, %v)", pair[0], pair[1], err1, err2)
		}
	}
	// Each input shows in the digest: the comparison above cannot pass by hashing nothing.
	o := testOptions(t)
	first, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	o.Created = o.Created.Add(time.Second)
	second, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := first.Digest()
	d2, _ := second.Digest()
	if d1 == d2 {
		t.Errorf("another creation time gives the same digest %s", d1)
	}
}

func TestTheSBOMListsEveryModuleOfTheBinary(t *testing.T) {
	o := testOptions(t)
	// A test binary carries no module list: the SBOM of the real binary is checked.
	p := Platform{OS: "linux", Arch: runtime.GOARCH, Binary: corednsBinary(t)}
	raw, err := SBOM(p, o.Created, "gatewaydns-coredns:sbom")
	if err != nil {
		t.Fatal(err)
	}
	var doc spdxDocument
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.CreationInfo.Created != "2026-11-27T12:00:00Z" {
		t.Errorf("version %q created %q", doc.SPDXVersion, doc.CreationInfo.Created)
	}
	bi, err := buildinfo.ReadFile(p.Binary)
	if err != nil {
		t.Fatal(err)
	}
	purls := map[string]bool{}
	ids := map[string]bool{}
	for _, pkg := range doc.Packages {
		if ids[pkg.SPDXID] {
			t.Errorf("SPDXID %s twice", pkg.SPDXID)
		}
		ids[pkg.SPDXID] = true
		for _, r := range pkg.ExternalRefs {
			purls[r.ReferenceLocator] = true
		}
	}
	if len(bi.Deps) < 5 {
		t.Fatalf("the test binary lists %d modules; the check below would prove little", len(bi.Deps))
	}
	for _, d := range append(bi.Deps, &bi.Main) {
		if d.Replace != nil {
			d = d.Replace
		}
		want := "pkg:golang/" + d.Path
		if d.Version != "" {
			want += "@" + d.Version
		}
		if !purls[want] {
			t.Errorf("no package %s in the SBOM", want)
		}
	}
	if !purls["pkg:golang/stdlib@"+bi.GoVersion] {
		t.Errorf("no Go standard library %s in the SBOM", bi.GoVersion)
	}
	if len(doc.Relationships) != len(doc.Packages) {
		t.Errorf("%d relationships for %d packages: every package is described or depended on", len(doc.Relationships), len(doc.Packages))
	}
}

// The Dockerfile, for docker users, must give the image hack/image makes: the same user,
// workdir, ports, entrypoint, environment and label keys.
func TestDockerfileYieldsTheSameConfig(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The instructions of the final stage, continuation lines joined.
	var final []string
	var cur string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		cur += line
		if strings.HasPrefix(cur, "FROM ") {
			final = nil
		}
		final = append(final, cur)
		cur = ""
	}
	got := v1.Config{ExposedPorts: map[string]struct{}{}, Labels: map[string]string{}}
	for _, ins := range final {
		op, arg, _ := strings.Cut(ins, " ")
		switch op {
		case "USER":
			got.User = arg
		case "WORKDIR":
			got.WorkingDir = arg
		case "EXPOSE":
			for _, p := range strings.Fields(arg) {
				if !strings.Contains(p, "/") {
					p += "/tcp"
				}
				got.ExposedPorts[p] = struct{}{}
			}
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(arg), &got.Entrypoint); err != nil {
				t.Fatalf("ENTRYPOINT %s: %v", arg, err)
			}
		case "ENV":
			got.Env = append(got.Env, arg)
		case "LABEL":
			for _, kv := range strings.Fields(arg) {
				k, v, _ := strings.Cut(kv, "=")
				got.Labels[k] = v
			}
		}
	}
	want := Config(Options{Source: "https://github.com/gatewaydns/gatewaydns", Revision: "r", Version: "v", Licenses: "l"})
	if got.User != want.User || got.WorkingDir != want.WorkingDir || !slices.Equal(got.Entrypoint, want.Entrypoint) {
		t.Errorf("Dockerfile: USER %q WORKDIR %q ENTRYPOINT %q; hack/image: %q %q %q",
			got.User, got.WorkingDir, got.Entrypoint, want.User, want.WorkingDir, want.Entrypoint)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(got.ExposedPorts)), slices.Sorted(maps.Keys(want.ExposedPorts))) {
		t.Errorf("Dockerfile exposes %v, hack/image %v", got.ExposedPorts, want.ExposedPorts)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(got.Labels)), slices.Sorted(maps.Keys(want.Labels))) {
		t.Errorf("Dockerfile labels %v, hack/image %v", got.Labels, want.Labels)
	}
	if got.Labels["org.opencontainers.image.source"] != want.Labels["org.opencontainers.image.source"] {
		t.Errorf("Dockerfile source label %q, hack/image %q", got.Labels["org.opencontainers.image.source"], want.Labels["org.opencontainers.image.source"])
	}
	// PATH comes with the distroless base; every other variable is set by the Dockerfile.
	for _, e := range want.Env {
		if !strings.HasPrefix(e, "PATH=") && !slices.Contains(got.Env, e) {
			t.Errorf("Dockerfile sets no ENV %s", e)
		}
	}
}

// TestMain removes what the tests built once for all of them.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBuiltCoreDNS()
	if toolPath != "" {
		os.RemoveAll(filepath.Dir(toolPath))
	}
	if sharedDir != "" {
		os.RemoveAll(sharedDir)
	}
	os.Exit(code)
}
