package image

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Written is what Write left in its directory.
type Written struct {
	Layout   string            // the OCI layout directory (index of every platform)
	Tarballs map[string]string // platform -> docker-archive tarball (docker load, podman load)
	SBOMs    map[string]string // platform -> SPDX JSON of the binary
	Index    v1.Hash           // the index's digest
}

// Write builds the image and writes, under dir: oci/ (an OCI layout whose index is the
// multi-platform index, annotated with ref), image-<os>-<arch>.tar (one image tagged ref, the
// archive `docker load` and `podman load` read, one per platform since a docker archive has no
// platforms) and sbom-<os>-<arch>.spdx.json. What was in oci/ before is replaced.
func Write(o Options, dir, ref string) (*Written, error) {
	tag, err := name.NewTag(ref)
	if err != nil {
		return nil, fmt.Errorf("image name %q: %w", ref, err)
	}
	idx, err := Build(o)
	if err != nil {
		return nil, err
	}
	w := &Written{Layout: filepath.Join(dir, "oci"), Tarballs: map[string]string{}, SBOMs: map[string]string{}}
	if w.Index, err = idx.Digest(); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(w.Layout); err != nil {
		return nil, err
	}
	lp, err := layout.Write(w.Layout, empty.Index)
	if err != nil {
		return nil, fmt.Errorf("oci layout: %w", err)
	}
	// The annotations buildx writes: skopeo and podman find the image by the tag, containerd
	// and docker load by the whole name.
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag.TagStr(),
		"io.containerd.image.name":          tag.String(),
	})); err != nil {
		return nil, fmt.Errorf("oci layout: %w", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for i, p := range o.Platforms {
		img, err := idx.Image(im.Manifests[i].Digest)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", p, err)
		}
		base := p.OS + "-" + p.Arch
		w.Tarballs[p.String()] = filepath.Join(dir, "image-"+base+".tar")
		if err := tarball.WriteToFile(w.Tarballs[p.String()], tag, img); err != nil {
			return nil, fmt.Errorf("tarball %s: %w", p, err)
		}
		sbom, err := SBOM(p, o.Created, tag.String())
		if err != nil {
			return nil, fmt.Errorf("sbom %s: %w", p, err)
		}
		w.SBOMs[p.String()] = filepath.Join(dir, "sbom-"+base+".spdx.json")
		if err := os.WriteFile(w.SBOMs[p.String()], sbom, 0o644); err != nil {
			return nil, err
		}
	}
	return w, nil
}
