package tests

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

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/docblocks"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// The documents whose commands must be true.
var docFiles = []string{"README.md", "deploy/README.md", "docs/migration.md", "docs/operations.md", "docs/comparison.md",
	"plugin/gatewaydns/README.md"}

// docCommandBlocks says, for every block of commands in the documents (by its file and first
// line), what shows it true: a test that runs it as written (ports, addresses and files moved
// to the test's), or why no test runs it here. A block of commands that is added to a
// document, or changed in its first line, fails TestDocsCommandBlocksAreAccountedFor until it
// is listed here.
var docCommandBlocks = map[string]string{
	"README.md: make demo   # a whole landscape on loopback: TLS":                   "hack/demo's TestDemoIsWhatTheREADMEShows runs the driver make demo builds and runs; make test is what CI runs",
	"README.md: [  0.6s] central etcd (TLS, client certificates ":                   "hack/demo's TestDemoIsWhatTheREADMEShows: the demo prints these commands and these answers",
	"README.md: $ dig @127.0.0.1 -p 1053 app.eu1.openmcp.cluster":                   "TestDocsMakeRunTranscripts, against the landscape of make run (hack/run-local.sh's records)",
	"README.md: make bench                                      ":                   "bench's TestREADMEBenchFlagsParse parses each BENCHFLAGS; the bench itself takes 22 minutes and is not in make test",
	"README.md: make build     # ./coredns (static, CGO off)":                       "TestDocsBuildAndShip: make build is what make test runs first, make image's command line by make -n (internal/image builds the image), ./coredns -plugins as written",
	"deploy/README.md: make image IMAGE=registry.example.com/platform/g":            "TestDocsBuildAndShip runs the make image line by make -n (the name's git describe included); skopeo needs a registry",
	"deploy/README.md: helm template gatewaydns deploy/chart -n kube-sy":            "TestChartDryRunApplies runs the pipeline with examples/workload.yaml, kubectl --dry-run=server",
	"deploy/README.md: kubectl kustomize deploy/overlays/kubeadm-image ":            "TestDeployKubeadmImageSwap runs it as step 1 (kubectl, on kubeadm's objects)",
	"deploy/README.md: kubectl kustomize deploy/overlays/workload |":                "TestDeployKubeadmImageSwap runs it as step 2 (kubectl, on kubeadm's objects)",
	"deploy/README.md: kubeadm upgrade apply v1.X.Y --skip-phases=addon":            "not here: it upgrades a node's control plane; TestDeployKubeadmImageSwap runs the add-on phase it skips, which fails on the gatewaydns image",
	"docs/migration.md: kubectl kustomize deploy/overlays/image-only |":             "TestDeployKubeadmImageSwap runs it (kubectl, on kubeadm's objects), as step 1's kubeadm-image does",
	"docs/migration.md: deploy/etcd/drop-ownerless.sh /skydns/<reversed ":           "TestMigrationFromExternalDNSWithoutRegistry runs the script with these arguments",
	"plugin/gatewaydns/README.md: $ dig @127.0.0.1 -p 1053 app.eu1.openmcp.cluster": "TestDocsMakeRunTranscripts, against the landscape of make run",
	"plugin/gatewaydns/README.md: $ dig @127.0.0.1 -p 1053 CH TXT web.eu1.openmcp.": "hack/demo's TestDemoIsWhatTheREADMEShows: make demo's central server explains",
	"plugin/gatewaydns/README.md: $ kubectl describe httproute web -n shop":         "TestObjectsSayWhatTheyPublished reads these Events (reason, source, message with the key's mod revision) from a real API server; kubectl only prints them",
	"plugin/gatewaydns/README.md: $ kubectl get dnsendpoint -n dns":                 "TestObjectsSayWhatTheyPublished reads this status (observedGeneration, endpoints, Accepted, Ready with its revision) from a real API server; kubectl only prints it",
	"plugin/gatewaydns/README.md: kubectl patch crd dnsendpoints.externaldns.k8s.i": "TestObjectsSayWhatTheyPublished applies deploy/crds/dnsendpoint-status.json as this JSON patch, through client-go: CI has no kubectl",
}

// commandWords are the first words of a line that is a command rather than configuration.
var commandWords = []string{"make", "kubectl", "helm", "kubeadm", "skopeo", "etcdctl", "bin/etcdctl", "dig", "go", "deploy/etcd/drop-ownerless.sh", "./coredns"}

// isCommandBlock: the block shows commands (a shell block, a transcript, or command lines),
// not a Corefile, a stanza's syntax or a query.
func isCommandBlock(b docblocks.Block) bool {
	if b.Info == "sh" || len(b.Steps()) > 0 {
		return true
	}
	first := strings.Fields(strings.TrimSpace(b.Lines[0]))
	return len(first) > 0 && slices.Contains(commandWords, first[0])
}

// docKey names a block by its file and the start of its first line.
func docKey(b docblocks.Block) string {
	l := strings.TrimSpace(b.Lines[0])
	if len(l) > 48 {
		l = l[:48]
	}
	return b.File + ": " + l
}

func readDocBlocks(t *testing.T) []docblocks.Block {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var all []docblocks.Block
	for _, f := range docFiles {
		blocks, err := docblocks.Read(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			b.File = f
			all = append(all, b)
		}
	}
	return all
}

// Every block of commands in the documents is run by a test, or says why none runs it here.
func TestDocsCommandBlocksAreAccountedFor(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range readDocBlocks(t) {
		if !isCommandBlock(b) {
			continue
		}
		k := docKey(b)
		seen[k] = true
		if _, ok := docCommandBlocks[k]; !ok {
			t.Errorf("%s: a block of commands no test runs; run it in one, or say why not in docCommandBlocks (key %q)", b.Where(), k)
		}
	}
	for k := range docCommandBlocks {
		if !seen[k] {
			t.Errorf("docCommandBlocks lists %q, which no document holds any more", k)
		}
	}
}

// makeRun is the landscape of `make run` (hack/run-local.sh): an etcd with the script's example
// records and the binary serving corefile.d/central.Corefile from it.
type makeRun struct {
	etcd    *testenv.Etcd
	dns     string
	etcdctl string
}

// runLocalPut is a record hack/run-local.sh writes.
var runLocalPut = regexp.MustCompile(`(?m)^put (\S+) '([^']+)'$`)

func startMakeRun(t *testing.T) *makeRun {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "hack", "run-local.sh"))
	if err != nil {
		t.Fatal(err)
	}
	e := testenv.StartEtcd(t)
	cli := e.Client(t)
	puts := runLocalPut.FindAllStringSubmatch(string(script), -1)
	if len(puts) == 0 {
		t.Fatal("hack/run-local.sh writes no record this test recognises (put KEY 'VALUE')")
	}
	for _, p := range puts {
		e2e.PutEtcd(t, cli, p[1], p[2])
	}
	p := e2e.RunCorefile(t, "central.Corefile", "GATEWAYDNS_ETCD_ENDPOINTS="+e.ClientURL)
	p.WaitReady(t, 30*time.Second)
	e2e.WaitFor(t, 10*time.Second, p.DNS, "app.eu1.openmcp.cluster.", dns.TypeA, e2e.AnswersWith("203.0.113.10", "203.0.113.11"))
	return &makeRun{etcd: e, dns: p.DNS, etcdctl: testenv.FindBinary(t, "etcdctl")}
}

// command is a documented command line as it runs against this landscape: the DNS port, the
// etcd URL (the script's http://127.0.0.1:23790, or none given) and etcdctl moved to the test's.
func (m *makeRun) command(doc string) string {
	_, port, _ := strings.Cut(m.dns, ":")
	c := strings.ReplaceAll(doc, "-p 1053", "-p "+port)
	c = strings.ReplaceAll(c, "http://127.0.0.1:23790", m.etcd.ClientURL)
	c = regexp.MustCompile(`^(bin/)?etcdctl `).ReplaceAllString(c, m.etcdctl+" ")
	if strings.HasPrefix(c, m.etcdctl+" ") && !strings.Contains(c, "--endpoints") {
		c = strings.Replace(c, m.etcdctl+" ", m.etcdctl+" --endpoints "+m.etcd.ClientURL+" ", 1)
	}
	return c
}

func runShell(t *testing.T, command string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", command)
	if root, err := testenv.RepoRoot(); err == nil {
		cmd.Dir = root
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The transcripts of make run's landscape in the README and the plugin's README print what
// they say, command by command (a message id, a serial and the like aside: docblocks.Normalize).
func TestDocsMakeRunTranscripts(t *testing.T) {
	if _, err := exec.LookPath("dig"); err != nil {
		t.Skip("dig is not installed (bind9-dnsutils)")
	}
	m := startMakeRun(t)
	ran := 0
	for _, b := range readDocBlocks(t) {
		steps := b.Steps()
		if len(steps) == 0 || !strings.HasPrefix(docCommandBlocks[docKey(b)], "TestDocsMakeRunTranscripts") {
			continue
		}
		for _, s := range steps {
			c := m.command(s.Command)
			out, err := runShell(t, c)
			if err != nil {
				t.Errorf("%s:%d: %s: %v\n%s", b.File, s.Line, s.Command, err, out)
				continue
			}
			if got, want := docblocks.Lines(out), docblocks.Lines(strings.Join(s.Output, "\n")); !slices.Equal(got, want) {
				t.Errorf("%s:%d: %s printed\n%s\nthe document says\n%s", b.File, s.Line, s.Command, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			ran++
		}
	}
	if ran < 10 {
		t.Errorf("ran %d documented commands, want the README's and the plugin README's transcripts (11)", ran)
	}
	t.Run("InlineEtcdctl", func(t *testing.T) { inlineEtcdctl(t, m) })
}

// inlineEtcdctl runs every etcdctl command the documents give in their text against make run's
// etcd, placeholders filled in: each must work with etcdctl 3.7, and a count must print one.
func inlineEtcdctl(t *testing.T, m *makeRun) {
	root, _ := testenv.RepoRoot()
	fill := strings.NewReplacer("<reversed zone>", "cluster/openmcp", "<cluster>", "eu1", "<owner>", "eu1", "<rev>", "1", "<key>", "/skydns/cluster/openmcp/us1/shop/5d1c0e2a")
	inline := regexp.MustCompile("`(etcdctl [^`]+)`")
	var deletes []string
	n := 0
	for _, f := range docFiles {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range inline.FindAllStringSubmatch(string(b), -1) {
			doc := c[1]
			if strings.Contains(doc, " del ") {
				deletes = append(deletes, f+": "+doc) // last: they delete what the others read
				continue
			}
			n++
			runInlineEtcdctl(t, m, f, doc, fill)
		}
	}
	for _, d := range deletes {
		f, doc, _ := strings.Cut(d, ": ")
		runInlineEtcdctl(t, m, f, doc, fill)
	}
	if n+len(deletes) < 5 {
		t.Errorf("ran %d inline etcdctl commands, want those of migration.md and operations.md", n+len(deletes))
	}
}

var etcdCount = regexp.MustCompile(`"Count" : [1-9]`)

func runInlineEtcdctl(t *testing.T, m *makeRun, file, doc string, fill *strings.Replacer) {
	t.Helper()
	out, err := runShell(t, m.command(fill.Replace(doc)))
	switch {
	case err != nil:
		t.Errorf("%s: `%s`: %v\n%s", file, doc, err, out)
	case strings.Contains(doc, "--count-only") && !etcdCount.MatchString(out):
		t.Errorf("%s: `%s` printed no count:\n%s", file, doc, out)
	default:
		t.Logf("%s: `%s`: %d bytes", file, doc, len(out))
	}
}

// The README's "Build and ship" and deploy/README.md's image commands: make image's command
// line resolves (make -n, with the tag from git describe in a repository without tags too; the
// image is built by internal/image's tests), and the built binary lists the plugin.
func TestDocsBuildAndShip(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	var lines []string
	for _, b := range readDocBlocks(t) {
		if k := docKey(b); strings.HasPrefix(docCommandBlocks[k], "TestDocsBuildAndShip") {
			lines = append(lines, b.Lines...)
		}
	}
	ran := 0
	for _, l := range lines {
		cmd, _, _ := strings.Cut(l, " # ")
		cmd = strings.TrimSpace(cmd)
		switch {
		case strings.HasPrefix(cmd, "make image "):
			out, err := runShell(t, "make -n "+strings.TrimPrefix(cmd, "make "))
			if err != nil || !strings.Contains(out, "./hack/image -name registry.example.com/platform/gatewaydns-coredns:") {
				t.Errorf("%s: make -n: %v\n%s", l, err, out)
			}
			ran++
		case strings.HasPrefix(cmd, "./coredns "):
			out, err := runShell(t, testenv.CoreDNSBinary(t)+strings.TrimPrefix(cmd, "./coredns"))
			if err != nil || strings.TrimSpace(out) != "gatewaydns" {
				t.Errorf("%s: %v\n%s", l, err, out)
			}
			ran++
		}
	}
	if ran != 3 {
		t.Errorf("ran %d of the README's and deploy/README.md's build commands, want 3 (two make image, ./coredns -plugins)", ran)
	}
	// The tag comes from git describe, which fails without --always in a clone without tags.
	if out, err := runShell(t, "git describe --tags --always --dirty"); err != nil {
		t.Errorf("git describe --tags --always --dirty: %v\n%s", err, out)
	}
}
