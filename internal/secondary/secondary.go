// Package secondary configures the enterprise secondaries that the tests and make bench run on
// loopback ports as secondaries of the zone openmcp.cluster: Knot (knotd) and NSD (nsd), from
// Debian's packages (.ci/run and make bench install them).
package secondary

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"text/template"
)

// Kinds are the secondaries this package configures.
var Kinds = []string{"knot", "nsd"}

// Config is one secondary of the zone.
type Config struct {
	Kind        string // "knot" or "nsd"
	Dir         string // its configuration, state and copy of the zone
	Port        string // it listens on 127.0.0.1:Port, UDP and TCP
	PrimaryPort string // the primary, 127.0.0.1:PrimaryPort, which it transfers from (no TSIG)
	Key         *Key   // when set, it requires NOTIFY signed with this key
	Persist     bool   // Knot keeps its copy across a restart (in its journal), and its timers
}

// Key is a TSIG key (HMAC-SHA256) that a secondary requires on NOTIFY.
type Key struct{ Name, Secret string }

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

// Command writes the secondary's configuration into c.Dir and returns the command that runs it
// in the foreground, its log on standard output and error.
func Command(c Config) (*exec.Cmd, error) {
	tmpl := map[string]*template.Template{"knot": knotConf, "nsd": nsdConf}[c.Kind]
	if tmpl == nil {
		return nil, fmt.Errorf("secondary: unknown kind %q (knot, nsd)", c.Kind)
	}
	conf := filepath.Join(c.Dir, c.Kind+".conf")
	f, err := os.Create(conf)
	if err != nil {
		return nil, fmt.Errorf("secondary %s: %w", c.Kind, err)
	}
	err = tmpl.Execute(f, c)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("secondary %s: writing %s: %w", c.Kind, conf, err)
	}
	bin, args := "knotd", []string{"-c", conf}
	if c.Kind == "nsd" {
		bin, args = "nsd", []string{"-d", "-c", conf}
	}
	path, err := Binary(bin)
	if err != nil {
		return nil, err
	}
	return exec.Command(path, args...), nil // #nosec G204 -- our own secondary, configured above
}

// Binary finds knotd or nsd on PATH or in /usr/sbin, where Debian puts them.
func Binary(bin string) (string, error) {
	if path, err := exec.LookPath(bin); err == nil {
		return path, nil
	}
	path := filepath.Join("/usr/sbin", bin)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s is not installed: apt-get install -y knot nsd (.ci/run installs them)", bin)
	}
	return path, nil
}
