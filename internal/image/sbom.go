package image

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"time"
)

// SPDX 2.3 JSON, the fields this SBOM fills (https://spdx.github.io/spdx-spec/v2.3/).
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	Name             string            `json:"name"`
	SPDXID           string            `json:"SPDXID"`
	VersionInfo      string            `json:"versionInfo,omitempty"`
	DownloadLocation string            `json:"downloadLocation"`
	FilesAnalyzed    bool              `json:"filesAnalyzed"`
	Checksums        []spdxChecksum    `json:"checksums,omitempty"`
	ExternalRefs     []spdxExternalRef `json:"externalRefs,omitempty"`
	Comment          string            `json:"comment,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// spdxIDUnsafe is what an SPDXID may not hold (letters, digits, '.' and '-' only).
var spdxIDUnsafe = regexp.MustCompile(`[^A-Za-z0-9.-]`)

// SBOM is the SPDX document of p's binary, made from the build info Go embeds in it (main
// module, every module linked in with its version and go.sum hash, the Go toolchain, the build
// settings): what `go version -m` prints, in a form scanners read. created fixes its time, so
// the same binary gives the same document.
func SBOM(p Platform, created time.Time, ref string) ([]byte, error) {
	bi, err := buildinfo.ReadFile(p.Binary)
	if err != nil {
		return nil, fmt.Errorf("reading the build info of %s: %w", p.Binary, err)
	}
	bin, err := os.ReadFile(p.Binary)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(bin)
	var settings string
	for _, s := range bi.Settings {
		settings += s.Key + "=" + s.Value + " "
	}
	root := spdxPackage{
		Name: bi.Main.Path, SPDXID: "SPDXRef-Package-coredns", VersionInfo: bi.Main.Version,
		DownloadLocation: "NOASSERTION",
		Checksums:        []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: hex.EncodeToString(sum[:])}},
		ExternalRefs:     []spdxExternalRef{purl(bi.Main.Path, bi.Main.Version)},
		Comment:          fmt.Sprintf("%s in %s for %s, built by %s with %s", BinaryPath, ref, p, bi.GoVersion, settings),
	}
	doc := spdxDocument{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name: ref + " " + p.String(),
		// Unique per binary, and the same for the same binary.
		DocumentNamespace: "https://github.com/gatewaydns/gatewaydns/spdx/" + p.OS + "-" + p.Arch + "-" + hex.EncodeToString(sum[:]),
		CreationInfo: spdxCreationInfo{
			Created:  created.UTC().Format(time.RFC3339),
			Creators: []string{"Tool: gatewaydns-hack-image"},
		},
		Packages:      []spdxPackage{root},
		Relationships: []spdxRelationship{{Element: "SPDXRef-DOCUMENT", Type: "DESCRIBES", Related: root.SPDXID}},
	}
	stdlib := spdxPackage{Name: "stdlib", SPDXID: "SPDXRef-Package-stdlib", VersionInfo: bi.GoVersion,
		DownloadLocation: "https://go.dev/dl/", ExternalRefs: []spdxExternalRef{purl("stdlib", bi.GoVersion)}}
	doc.Packages = append(doc.Packages, stdlib)
	doc.Relationships = append(doc.Relationships, spdxRelationship{root.SPDXID, "DEPENDS_ON", stdlib.SPDXID})
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		pkg := spdxPackage{
			Name: d.Path, SPDXID: "SPDXRef-Package-" + spdxIDUnsafe.ReplaceAllString(d.Path+"-"+d.Version, "-"),
			VersionInfo: d.Version, DownloadLocation: "https://proxy.golang.org/" + d.Path + "/@v/" + d.Version + ".zip",
			ExternalRefs: []spdxExternalRef{purl(d.Path, d.Version)},
		}
		if d.Sum != "" {
			pkg.Comment = "go.sum " + d.Sum
		}
		doc.Packages = append(doc.Packages, pkg)
		doc.Relationships = append(doc.Relationships, spdxRelationship{root.SPDXID, "DEPENDS_ON", pkg.SPDXID})
	}
	return json.MarshalIndent(doc, "", "  ")
}

// purl is the package URL of a Go module (https://github.com/package-url/purl-spec, type golang).
func purl(path, version string) spdxExternalRef {
	loc := "pkg:golang/" + path
	if version != "" {
		loc += "@" + version
	}
	return spdxExternalRef{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: loc}
}
