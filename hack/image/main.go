// Command image assembles the gatewaydns container image from binaries `make image` built
// (one per platform), with no container engine: see internal/image and deploy/README.md
// "The image".
//
//	go run ./hack/image -name gatewaydns-coredns:v0.1.0 -out _output/image \
//	    -binary linux/amd64=_output/image/coredns-linux-amd64 -binary linux/arm64=...
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/image"
)

// platforms collects -binary os/arch=path flags.
type platforms []image.Platform

func (p *platforms) String() string { return fmt.Sprint(*p) }

func (p *platforms) Set(v string) error {
	plat, path, ok := strings.Cut(v, "=")
	goos, arch, ok2 := strings.Cut(plat, "/")
	if !ok || !ok2 || path == "" {
		return fmt.Errorf("want os/arch=path, got %q", v)
	}
	*p = append(*p, image.Platform{OS: goos, Arch: arch, Binary: path})
	return nil
}

func main() {
	var o image.Options
	var plats platforms
	ref := flag.String("name", "", "the image name the tarballs are tagged with and the layout annotates (required)")
	out := flag.String("out", "_output/image", "directory to write the OCI layout, tarballs and SBOMs to")
	created := flag.String("created", "", "Unix time the image and its files are stamped with (default $SOURCE_DATE_EPOCH; required: use the commit's time)")
	flag.Var(&plats, "binary", "os/arch=path of a static binary, once per platform")
	flag.StringVar(&o.CACerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "PEM bundle copied to "+image.CACertsPath)
	flag.StringVar(&o.Source, "source", "", "label org.opencontainers.image.source")
	flag.StringVar(&o.Revision, "revision", "", "label org.opencontainers.image.revision")
	flag.StringVar(&o.Version, "version", "", "label org.opencontainers.image.version")
	flag.StringVar(&o.Licenses, "licenses", "", "label org.opencontainers.image.licenses (an SPDX expression)")
	flag.Parse()
	if *created == "" {
		*created = os.Getenv("SOURCE_DATE_EPOCH")
	}
	secs, err := strconv.ParseInt(*created, 10, 64)
	if err != nil || *ref == "" || len(plats) == 0 {
		fmt.Fprintln(os.Stderr, "image: need -name, -created (or $SOURCE_DATE_EPOCH) as Unix seconds and at least one -binary")
		flag.Usage()
		os.Exit(2)
	}
	o.Created, o.Platforms = time.Unix(secs, 0), plats
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	w, err := image.Write(o, *out, *ref)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: index %s\n  OCI layout  %s\n", *ref, w.Index, w.Layout)
	for _, p := range plats {
		fmt.Printf("  %-12s %s (docker load / podman load), SBOM %s\n", p.String(), w.Tarballs[p.String()], w.SBOMs[p.String()])
	}
}
