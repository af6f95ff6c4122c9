// Package secondary configures the enterprise secondaries that the tests and make bench run on
// loopback ports as secondaries of the zone openmcp.cluster: Knot (knotd) and NSD (nsd), from
// Debian's packages (.ci/run and make bench install them). make bench also runs them as
// primaries of a zone file (PrimaryCommand), to compare gatewaydns's cost per question with.
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
	// Catalog, when set, is the catalog zone (RFC 9432) Knot reads from the primary and serves
	// the member zones of, each transferred from the primary, instead of openmcp.cluster.
	Catalog string
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
{{- if .Catalog}}
  - id: member
    storage: "{{.Dir}}"
    zonefile-sync: -1
    zonefile-load: none
    journal-content: none
    master: primary
    acl: [notify, transfer]
zone:
  - domain: {{.Catalog}}
    master: primary
    acl: [notify, transfer]
    catalog-role: interpret
    catalog-template: member
{{- else}}
zone:
  - domain: openmcp.cluster
    master: primary
    acl: [notify, transfer]
{{- end}}
`))

// nsdServer is the server section of NSD's configuration, a secondary's or a primary's.
const nsdServer = `{{define "server"}}server:
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
{{- end}}`

var nsdConf = template.Must(template.Must(template.New("nsd").Parse(nsdServer)).Parse(`{{template "server" .}}
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

// The primaries: one worker each, as make bench compares servers one core each, serving the
// zone's file (openmcp.cluster.zone in Dir).
var (
	knotPrimary = template.Must(template.New("knot").Parse(`server:
    rundir: "{{.Dir}}"
    listen: 127.0.0.1@{{.Port}}
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
log:
  - target: stdout
    any: warning
database:
    storage: "{{.Dir}}"
template:
  - id: default
    storage: "{{.Dir}}"
    zonefile-sync: -1
    journal-content: none
zone:
  - domain: openmcp.cluster
    file: openmcp.cluster.zone
`))
	nsdPrimary = template.Must(template.Must(template.New("nsd").Parse(nsdServer)).Parse(`{{template "server" .}}
    verbosity: 1
    # Response rate limiting (on in Debian's build) would drop a benchmark's one client.
    rrl-ratelimit: 0
    rrl-whitelist-ratelimit: 0
remote-control:
    control-enable: no
zone:
    name: openmcp.cluster
    zonefile: "openmcp.cluster.zone"
`))
)

// Command writes the secondary's configuration into c.Dir and returns the command that runs it
// in the foreground, its log on standard output and error.
func Command(c Config) (*exec.Cmd, error) {
	if c.Catalog != "" && c.Kind != "knot" {
		return nil, fmt.Errorf("secondary: only Knot reads catalogs here (NSD 4.6 does not), not %s", c.Kind)
	}
	tmpl := map[string]*template.Template{"knot": knotConf, "nsd": nsdConf}[c.Kind]
	return command(c.Kind, c.Dir, tmpl, c)
}

// PrimaryCommand writes the configuration of Knot or NSD (kind) serving openmcp.cluster from
// dir/openmcp.cluster.zone on 127.0.0.1:port into dir, and returns the command that runs it in
// the foreground, its log on standard output and error.
func PrimaryCommand(kind, dir, port string) (*exec.Cmd, error) {
	tmpl := map[string]*template.Template{"knot": knotPrimary, "nsd": nsdPrimary}[kind]
	return command(kind, dir, tmpl, Config{Kind: kind, Dir: dir, Port: port})
}

func command(kind, dir string, tmpl *template.Template, c Config) (*exec.Cmd, error) {
	if tmpl == nil {
		return nil, fmt.Errorf("secondary: unknown kind %q (knot, nsd)", kind)
	}
	conf := filepath.Join(dir, kind+".conf")
	f, err := os.Create(conf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	err = tmpl.Execute(f, c)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("%s: writing %s: %w", kind, conf, err)
	}
	bin, args := "knotd", []string{"-c", conf}
	if kind == "nsd" {
		bin, args = "nsd", []string{"-d", "-c", conf}
	}
	path, err := Binary(bin)
	if err != nil {
		return nil, err
	}
	return exec.Command(path, args...), nil // #nosec G204 -- our own server, configured above
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
