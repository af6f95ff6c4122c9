//go:build ignore

// gen writes zplugin.go from ../../../plugin.cfg; run it with `go generate ./cmd/coredns/plugins`.
package main

import (
	"log"
	"os"

	"github.com/gatewaydns/gatewaydns/internal/plugincfg"
)

func main() {
	f, err := os.Open("../../../plugin.cfg")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	plugins, err := plugincfg.Parse(f)
	if err != nil {
		log.Fatalf("plugin.cfg: %v", err)
	}
	src, err := plugincfg.Generate("plugins", plugins)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("zplugin.go", src, 0o644); err != nil {
		log.Fatal(err)
	}
}
