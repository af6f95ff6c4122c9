package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/docblocks"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// TestMain lets the test binary be the demo's driver: `up` starts a copy of the running program
// as the landscape's background process (`serve`), and the test runs the driver's commands.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && slices.Contains([]string{"up", "down", "serve", "set-address"}, os.Args[1]) {
		main()
		return
	}
	os.Exit(m.Run())
}

// The demo is what the README shows, and the commands it prints work: `up` prints the
// README's progress lines, commands and answers (ports of kube-apiservers, times, a serial and
// explain's revision aside), the plugin README's explain example is what its central server
// answers, every "Query it yourself" command runs, set-address's new address is answered, and
// `down` stops it all.
func TestDemoIsWhatTheREADMEShows(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo's landscape: two kube-apiservers, etcd and three CoreDNS")
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{filepath.Join(root, "coredns"), filepath.Join(root, "bin", "etcd"), filepath.Join(root, "bin", "etcdctl"), filepath.Join(root, "bin", "kube-apiserver")} {
		if _, err := os.Stat(b); err != nil {
			if os.Getenv(testenv.EnvTestBin) != "" {
				t.Fatalf("%s is missing: make build test-binaries builds it", b)
			}
			t.Skipf("%s is missing (make build demo-binaries)", b)
		}
	}
	if _, err := exec.LookPath("dig"); err != nil {
		t.Skip("dig is not installed (bind9-dnsutils): the demo's answers are dig's")
	}
	_, noKubectl := exec.LookPath("kubectl")
	d := &demo{root: root, dir: filepath.Join(root, ".cache", "demo")}
	if d.running() {
		t.Skip("a demo is running (make demo-down stops it)")
	}
	if err := checkPorts(); err != nil {
		t.Skip(err)
	}
	driver := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), startupWait)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		out, err := driver("down")
		if err != nil || !strings.Contains(out, "The demo is stopped") {
			t.Errorf("down: %v\n%s", err, out)
		}
	})
	start := time.Now()
	out, err := driver("up")
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	t.Logf("the landscape answered %v after up", time.Since(start).Round(100*time.Millisecond))

	printed := normalizeDemo(docblocks.Lines(out))
	for _, doc := range []string{"README.md", filepath.Join("plugin", "gatewaydns", "README.md")} {
		blocks, err := docblocks.Read(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, b := range blocks {
			if !slices.ContainsFunc(b.Steps(), func(s docblocks.Step) bool { return strings.Contains(s.Command, "-p 1053 CH TXT") }) {
				continue
			}
			n++
			for _, l := range normalizeDemo(docblocks.Lines(strings.Join(b.Lines, "\n"))) {
				if !slices.Contains(printed, l) {
					t.Errorf("%s: %s shows %q, which the demo did not print", doc, b.Where(), l)
				}
			}
		}
		if n != 1 {
			t.Errorf("%s: %d blocks show the demo's explain, want 1", doc, n)
		}
	}

	ran := 0
	for _, c := range queryCommands(out) {
		if strings.HasPrefix(c, "kubectl ") && noKubectl != nil {
			t.Logf("kubectl is not installed: not run: %s", c)
			ran++
			continue
		}
		c = strings.ReplaceAll(c, builtDriver+" ", os.Args[0]+" ")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", c)
		cmd.Dir = root
		got, err := cmd.CombinedOutput()
		cancel()
		switch {
		case err != nil || len(strings.TrimSpace(string(got))) == 0:
			t.Errorf("%s: %v\n%s", c, err, got)
		case strings.Contains(c, "set-address eu1 203.0.113.99") && !strings.HasSuffix(strings.TrimSpace(string(got)), "203.0.113.99"):
			t.Errorf("%s: the new address is not answered:\n%s", c, got)
		}
		ran++
	}
	if ran != 7 {
		t.Errorf("ran %d of the demo's printed commands, want 7", ran)
	}
}

// queryCommands are the commands the demo prints under "Query it yourself" and "Change a
// Gateway's address": continued lines joined, comments cut.
func queryCommands(out string) []string {
	_, rest, ok := strings.Cut(out, "Query it yourself:\n")
	if !ok {
		return nil
	}
	var cmds []string
	cont := false
	for l := range strings.Lines(rest) {
		if !strings.HasPrefix(l, "  ") {
			if strings.HasPrefix(l, "Metrics:") {
				break
			}
			continue
		}
		l = strings.TrimSpace(l)
		if i := strings.Index(l, "  #"); i >= 0 {
			l = strings.TrimSpace(l[:i])
		}
		joined := strings.TrimSuffix(l, "\\")
		if cont {
			cmds[len(cmds)-1] += " " + strings.TrimSpace(joined)
		} else {
			cmds = append(cmds, strings.TrimSpace(joined))
		}
		cont = strings.HasSuffix(l, "\\")
	}
	return cmds
}

var (
	progressTime = regexp.MustCompile(`^\[ *[0-9.]+s\] `)
	apiServerURL = regexp.MustCompile(`https://127\.0\.0\.1:\d+/`)
)

// normalizeDemo is lines with what differs between runs of the demo made equal: the progress
// lines' times, the kube-apiservers' ports.
func normalizeDemo(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		l = progressTime.ReplaceAllString(l, "[T] ")
		out[i] = apiServerURL.ReplaceAllString(l, "https://127.0.0.1:PORT/")
	}
	return out
}
