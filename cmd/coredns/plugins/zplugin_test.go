package plugins

import (
	"bytes"
	"os"
	"testing"

	"github.com/gatewaydns/gatewaydns/internal/plugincfg"
)

func TestGeneratedPluginListMatchesPluginCfg(t *testing.T) {
	f, err := os.Open("../../../plugin.cfg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	plugins, err := plugincfg.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	want, err := plugincfg.Generate("plugins", plugins)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("zplugin.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("cmd/coredns/plugins/zplugin.go is stale: run `go generate ./cmd/coredns/plugins`")
	}
}
