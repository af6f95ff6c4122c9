package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"
)

// An enterprise secondary (Knot or NSD, from Debian's packages: .ci/run installs them) run by
// a test on a loopback port as a secondary of the zone openmcp.cluster.
type enterpriseSecondary struct {
	kind    string // "knot" or "nsd"
	DNS     string // host:port
	primary string // host:port
	tsig    *tsigKey
	persist bool // Knot keeps its copy across a restart (in its journal), and its timers
	dir     string
	cmd     *exec.Cmd
	log     *processLog
	done    chan error
}

// tsigKey is a TSIG key that a secondary requires on NOTIFY.
type tsigKey struct{ name, secret string }

// newEnterpriseSecondary picks the port and directory of a secondary of primary; start runs it.
func newEnterpriseSecondary(t *testing.T, kind, primary string, tsig *tsigKey) *enterpriseSecondary {
	t.Helper()
	s := &enterpriseSecondary{kind: kind, DNS: fmt.Sprintf("127.0.0.1:%d", freePort(t)), primary: primary, tsig: tsig, dir: t.TempDir(), log: new(processLog)}
	t.Cleanup(func() {
		s.stop(t)
		if t.Failed() || os.Getenv("GATEWAYDNS_E2E_LOGS") != "" {
			t.Logf("%s %s output:\n%s", kind, s.DNS, s.log.String())
		}
	})
	return s
}

var knotConf = template.Must(template.New("knot").Parse(`server:
    rundir: "{{.Dir}}"
    listen: 127.0.0.1@{{.Port}}
log:
  - target: stdout
    any: info
database:
    storage: "{{.Dir}}"
{{- if .Key}}
key:
  - id: {{.Key.Name}}
    algorithm: hmac-sha256
    secret: {{.Key.Secret}}
{{- end}}
remote:
  - id: primary
    address: 127.0.0.1@{{.PrimaryPort}}
acl:
  - id: notify
    address: 127.0.0.1
    action: notify
{{- if .Key}}
    key: {{.Key.Name}}
{{- end}}
  - id: transfer
    address: 127.0.0.1
    action: transfer
template:
  - id: default
    storage: "{{.Dir}}"
    zonefile-sync: -1
    zonefile-load: none
    journal-content: {{if .Persist}}all{{else}}none{{end}}
zone:
  - domain: openmcp.cluster
    master: primary
    acl: [notify, transfer]
`))

var nsdConf = template.Must(template.New("nsd").Parse(`server:
    ip-address: 127.0.0.1@{{.Port}}
    port: {{.Port}}
    do-ip6: no
    username: ""
    chroot: ""
    zonesdir: "{{.Dir}}"
    database: ""
    pidfile: "{{.Dir}}/nsd.pid"
    xfrdfile: "{{.Dir}}/xfrd.state"
    xfrdir: "{{.Dir}}"
    zonelistfile: "{{.Dir}}/zone.list"
    server-count: 1
    verbosity: 2
remote-control:
    control-enable: no
{{- if .Key}}
key:
    name: {{.Key.Name}}
    algorithm: hmac-sha256
    secret: "{{.Key.Secret}}"
{{- end}}
zone:
    name: openmcp.cluster
    zonefile: "openmcp.cluster.zone"
    allow-notify: 127.0.0.1 {{if .Key}}{{.Key.Name}}{{else}}NOKEY{{end}}
    request-xfr: 127.0.0.1@{{.PrimaryPort}} NOKEY
    provide-xfr: 127.0.0.1 NOKEY
`))

// start runs the secondary (again, after stop, with what it held on disk).
func (s *enterpriseSecondary) start(t *testing.T) {
	t.Helper()
	_, port, _ := strings.Cut(s.DNS, ":")
	_, pport, _ := strings.Cut(s.primary, ":")
	data := struct {
		Dir, Port, PrimaryPort string
		Key                    *struct{ Name, Secret string }
		Persist                bool
	}{Dir: s.dir, Port: port, PrimaryPort: pport, Persist: s.persist}
	if s.tsig != nil {
		data.Key = &struct{ Name, Secret string }{s.tsig.name, s.tsig.secret}
	}
	conf := filepath.Join(s.dir, s.kind+".conf")
	f, err := os.Create(conf)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := map[string]*template.Template{"knot": knotConf, "nsd": nsdConf}[s.kind]
	if err := tmpl.Execute(f, data); err != nil {
		t.Fatal(err)
	}
	f.Close()
	bin, args := "knotd", []string{"-c", conf}
	if s.kind == "nsd" {
		bin, args = "nsd", []string{"-d", "-c", conf}
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		path = filepath.Join("/usr/sbin", bin)
		if _, serr := os.Stat(path); serr != nil {
			t.Fatalf("%s is not installed: apt-get install -y knot nsd (.ci/run installs them)", bin)
		}
	}
	s.cmd = exec.Command(path, args...) // #nosec G204 -- the test's own secondary
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.done = make(chan error, 1)
	go func() { s.done <- s.cmd.Wait() }()
}

// stop ends the secondary, by its pid, within 10 s.
func (s *enterpriseSecondary) stop(t *testing.T) {
	if s.cmd == nil {
		return
	}
	defer func() { s.cmd = nil }()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		t.Errorf("%s did not stop within 10s of SIGTERM", s.kind)
	}
}
