// Package image assembles the gatewaydns container image without a container engine: one
// layer holding the static binary that `make build` makes (with the cap_net_bind_service file
// capability), CA certificates and the nonroot user, on no base, in the shape of the stock
// CoreDNS image. Everything that goes in is fixed by the inputs (file contents, one timestamp),
// so the same commit gives the same digests.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// UID and GID are the stock CoreDNS image's user (distroless "nonroot").
	UID = 65532
	GID = 65532
	// BinaryPath is where the binary is, the entrypoint, as in the stock image.
	BinaryPath = "/coredns"
	// CACertsPath is the bundle Go's crypto/x509 reads first on Linux; SSL_CERT_FILE names it
	// too, as the distroless base does.
	CACertsPath = "/etc/ssl/certs/ca-certificates.crt"

	// CapabilityXattr is the extended attribute that holds file capabilities, and PAXCapability
	// the PAX record a tar layer carries it in (the form docker, podman and containerd unpack).
	CapabilityXattr = "security.capability"
	PAXCapability   = "SCHILY.xattr." + CapabilityXattr
)

// Platform is a binary built for one os/arch (GOOS=linux, GOARCH=Arch).
type Platform struct {
	OS, Arch string
	Binary   string // path of the static binary
}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Options are the inputs of Build. The same Options give the same digests.
type Options struct {
	Platforms []Platform
	// CACerts is the PEM bundle copied to CACertsPath.
	CACerts string
	// Created stamps the config, the history and every file of the layer (the commit's time,
	// not the build's, so that rebuilding does not change the digest).
	Created time.Time
	// Source, Revision, Version, Licenses are the org.opencontainers.image.* labels; an empty
	// one is left out.
	Source, Revision, Version, Licenses string
}

// Config is the runtime configuration of the image: the stock CoreDNS image's, which the
// Dockerfile also yields (TestDockerfileYieldsTheSameConfig compares them).
func Config(o Options) v1.Config {
	labels := map[string]string{}
	for k, v := range map[string]string{
		"org.opencontainers.image.source":   o.Source,
		"org.opencontainers.image.revision": o.Revision,
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.licenses": o.Licenses,
		"org.opencontainers.image.title":    "gatewaydns-coredns",
	} {
		if v != "" {
			labels[k] = v
		}
	}
	return v1.Config{
		User:         fmt.Sprintf("%d:%d", UID, GID),
		WorkingDir:   "/",
		Entrypoint:   []string{BinaryPath},
		ExposedPorts: map[string]struct{}{"53/tcp": {}, "53/udp": {}},
		Env: []string{
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"SSL_CERT_FILE=" + CACertsPath,
		},
		Labels: labels,
	}
}

// Build returns the OCI index of one image per platform.
func Build(o Options) (v1.ImageIndex, error) {
	if len(o.Platforms) == 0 {
		return nil, fmt.Errorf("image: no platform to build")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range o.Platforms {
		img, err := Image(o, p)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch}},
		})
	}
	return idx, nil
}

// Image returns the image of one platform.
func Image(o Options, p Platform) (v1.Image, error) {
	layer, err := Layer(o, p)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	created := v1.Time{Time: o.Created.UTC()}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   created,
			CreatedBy: "gatewaydns hack/image: " + BinaryPath + " (cap_net_bind_service=+ep), CA certificates, nonroot user",
		},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = p.OS, p.Arch
	cf.Created = created
	cf.Config = Config(o)
	return mutate.ConfigFile(img, cf)
}

// Layer is the image's only layer, gzip-compressed with OCI media type. It is compressed once
// here (compress/gzip writes no time or name in its header: the same tar, the same bytes), not
// again by every writer that reads it.
func Layer(o Options, p Platform) (v1.Layer, error) {
	raw, err := layerTar(o, p)
	if err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gz.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// entry is one file or directory of the layer.
type entry struct {
	name    string
	mode    int64
	nonroot bool // owned by UID:GID, not root
	body    []byte
	dir     bool
	pax     map[string]string
}

// layerTar writes the layer's tar, its entries in a fixed order with fixed times and owners.
func layerTar(o Options, p Platform) ([]byte, error) {
	bin, err := os.ReadFile(p.Binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	certs, err := os.ReadFile(o.CACerts)
	if err != nil {
		return nil, fmt.Errorf("reading the CA certificates: %w", err)
	}
	entries := []entry{
		{name: "coredns", mode: 0o755, body: bin, pax: map[string]string{PAXCapability: string(NetBindServiceCapability())}},
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, body: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID))},
		{name: "etc/passwd", mode: 0o644, body: []byte(fmt.Sprintf(
			"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, GID))},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(CACertsPath, "/"), mode: 0o644, body: certs},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, nonroot: true, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := o.Created.UTC()
	for _, e := range entries {
		h := &tar.Header{
			Name: e.name, Mode: e.mode, ModTime: mtime,
			Typeflag: tar.TypeReg, Size: int64(len(e.body)), PAXRecords: e.pax,
			Format: tar.FormatPAX,
		}
		if e.nonroot {
			h.Uid, h.Gid = UID, GID
		}
		if e.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// capNetBindService is CAP_NET_BIND_SERVICE's number (linux/capability.h).
const capNetBindService = 10

// NetBindServiceCapability is the security.capability value of `setcap cap_net_bind_service=+ep`:
// a vfs_cap_data revision 2 (linux/capability.h) with the effective flag and the capability in
// the permitted set, little-endian. Revision 2 (no root uid) is what setcap writes and what
// the kernel maps into a user namespace.
func NetBindServiceCapability() []byte {
	const (
		vfsCapRevision2     = 0x02000000
		vfsCapFlagEffective = 0x000001
	)
	b := make([]byte, 20)
	binary.LittleEndian.PutUint32(b[0:], vfsCapRevision2|vfsCapFlagEffective)
	binary.LittleEndian.PutUint32(b[4:], 1<<capNetBindService) // permitted, low word
	// inheritable low word, permitted and inheritable high words: zero.
	return b
}
