package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/gatewaydns/gatewaydns/internal/child"
	"github.com/gatewaydns/gatewaydns/internal/freeport"
)

// Etcd is a single-member etcd server started by StartEtcd. Its ports and
// data directory stay the same across Stop/Restart.
type Etcd struct {
	// ClientURL is the client URL, http://127.0.0.1:PORT, or https:// with
	// WithEtcdTLS.
	ClientURL string
	// PeerURL is the (unused, plain http) peer URL.
	PeerURL string
	// Dir is the temporary directory holding the data dir, the log and the
	// certificates.
	Dir string
	// DataDir is etcd's --data-dir.
	DataDir string
	// LogFile receives etcd's output, across restarts.
	LogFile string
	// TLS holds the certificate files when started with WithEtcdTLS; nil
	// otherwise.
	TLS *TLSFiles
	// Bin is the etcd binary.
	Bin string

	t         testing.TB
	extraArgs []string

	opMu sync.Mutex // serializes start and stop
	mu   sync.Mutex // guards the fields below
	proc *child.Process
	auth *EtcdAuth
}

// EtcdOption configures StartEtcd.
type EtcdOption func(*etcdOptions)

type etcdOptions struct {
	tls  bool
	args []string
}

// WithEtcdTLS serves the client URL over https with a throwaway CA and
// requires client certificates (--client-cert-auth). The files are in
// Etcd.TLS; Etcd.Client uses them.
func WithEtcdTLS() EtcdOption { return func(o *etcdOptions) { o.tls = true } }

// WithEtcdArgs adds command-line flags (e.g. "--auto-compaction-retention=1")
// to etcd's. A flag given here overrides the default of the same name.
func WithEtcdArgs(args ...string) EtcdOption {
	return func(o *etcdOptions) { o.args = append(o.args, args...) }
}

// StartEtcd starts the etcd binary (see FindBinary) on free 127.0.0.1 ports
// with its data in a directory under t.TempDir(), and waits until it reports
// healthy. It is stopped by t.Cleanup; when the test failed, the tail of its
// log is printed.
func StartEtcd(t testing.TB, opts ...EtcdOption) *Etcd {
	t.Helper()
	var o etcdOptions
	for _, opt := range opts {
		opt(&o)
	}
	bin := FindBinary(t, "etcd")
	dir := t.TempDir()
	e := &Etcd{
		Dir:       dir,
		DataDir:   filepath.Join(dir, "data"),
		LogFile:   filepath.Join(dir, "etcd.log"),
		Bin:       bin,
		t:         t,
		extraArgs: o.args,
	}
	if o.tls {
		pki, err := writePKI(dir)
		if err != nil {
			t.Fatalf("testenv: generating etcd certificates: %v", err)
		}
		e.TLS = pki
	}
	logOnFailure(t, "etcd", e.LogFile)
	t.Cleanup(func() { e.stop(syscall.SIGTERM) })

	// A free port can be taken by someone else between our probe and etcd's
	// bind; pick new ports and retry in that case.
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		var ports []int
		ports, err = freeport.Take(2)
		if err != nil {
			t.Fatalf("testenv: finding free ports: %v", err)
		}
		scheme := "http"
		if e.TLS != nil {
			scheme = "https"
		}
		e.ClientURL = fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[0])
		e.PeerURL = fmt.Sprintf("http://127.0.0.1:%d", ports[1])
		if err = e.start(); err == nil {
			return e
		}
		if !strings.Contains(LogTail(e.LogFile, 20), "address already in use") {
			break
		}
		os.RemoveAll(e.DataDir)
	}
	t.Fatalf("testenv: starting etcd: %v", err)
	return nil
}

func (e *Etcd) args() []string {
	args := map[string]string{
		"name":                        "testenv",
		"data-dir":                    e.DataDir,
		"listen-client-urls":          e.ClientURL,
		"advertise-client-urls":       e.ClientURL,
		"listen-peer-urls":            e.PeerURL,
		"initial-advertise-peer-urls": e.PeerURL,
		"initial-cluster":             "testenv=" + e.PeerURL,
		"initial-cluster-state":       "new",
		"initial-cluster-token":       "testenv",
		"heartbeat-interval":          "50",
		"election-timeout":            "500",
		"unsafe-no-fsync":             "true",
		"bcrypt-cost":                 "4", // the minimum: fast auth in tests
		"log-level":                   "info",
	}
	if e.TLS != nil {
		args["cert-file"] = e.TLS.ServerCertFile
		args["key-file"] = e.TLS.ServerKeyFile
		args["trusted-ca-file"] = e.TLS.CAFile
		args["client-cert-auth"] = "true"
	}
	var extra []string
	for _, a := range e.extraArgs {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if _, ok := args[name]; ok {
			delete(args, name)
		}
		extra = append(extra, a)
	}
	out := make([]string, 0, len(args)+len(extra))
	for _, k := range slices.Sorted(maps.Keys(args)) {
		out = append(out, "--"+k+"="+args[k])
	}
	return append(out, extra...)
}

// start launches the process and waits for it to be healthy.
func (e *Etcd) start() error {
	e.opMu.Lock()
	defer e.opMu.Unlock()
	if e.Running() {
		return errors.New("etcd is already running")
	}
	p, err := child.Start("etcd", e.LogFile, exec.Command(e.Bin, e.args()...))
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.proc = p
	e.mu.Unlock()

	if err := e.waitHealthy(p, 30*time.Second); err != nil {
		e.stopLocked(syscall.SIGKILL)
		return err
	}
	return nil
}

func (e *Etcd) waitHealthy(p *child.Process, timeout time.Duration) error {
	tr := &http.Transport{}
	if e.TLS != nil {
		cfg, err := e.TLS.ClientConfig()
		if err != nil {
			return err
		}
		tr.TLSClientConfig = cfg
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	last := errors.New("no answer yet")
	for {
		select {
		case <-p.Exited():
			return fmt.Errorf("etcd exited before becoming healthy (%v); log %s:\n%s", p.Err(), e.LogFile, LogTail(e.LogFile, 30))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd at %s not healthy after %v: %v", e.ClientURL, timeout, last)
		}
		if err := checkHealth(hc, e.ClientURL+"/health"); err == nil {
			return nil
		} else {
			last = err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func checkHealth(hc *http.Client, url string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var h struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return fmt.Errorf("%s: %s: %q", url, resp.Status, body)
	}
	if h.Health != "true" {
		return fmt.Errorf("%s: health=%q reason=%q", url, h.Health, h.Reason)
	}
	return nil
}

// stop signals the process and waits for it to exit (SIGKILL after 15s).
func (e *Etcd) stop(sig syscall.Signal) {
	e.opMu.Lock()
	defer e.opMu.Unlock()
	e.stopLocked(sig)
}

func (e *Etcd) stopLocked(sig syscall.Signal) {
	e.mu.Lock()
	p := e.proc
	e.mu.Unlock()
	if p == nil {
		return
	}
	p.Stop(sig, 15*time.Second)
	e.mu.Lock()
	e.proc = nil
	e.mu.Unlock()
}

// Stop stops etcd gracefully (SIGTERM) and waits for it to exit. The data
// directory is kept, for Restart. Stopping a stopped server does nothing.
func (e *Etcd) Stop() {
	e.t.Helper()
	e.stop(syscall.SIGTERM)
}

// Kill stops etcd abruptly (SIGKILL), as in a crash. The data directory is
// kept, for Restart.
func (e *Etcd) Kill() {
	e.t.Helper()
	e.stop(syscall.SIGKILL)
}

// Restart stops etcd if it runs and starts it again with the same data
// directory, ports and certificates, waiting until it is healthy. Clients
// made by Client reconnect by themselves. Stop, Kill and Restart fail the
// test on error, so call them from the test's goroutine.
func (e *Etcd) Restart() {
	e.t.Helper()
	e.Stop()
	if err := e.start(); err != nil {
		e.t.Fatalf("testenv: restarting etcd: %v", err)
	}
}

// Running reports whether the etcd process runs.
func (e *Etcd) Running() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.proc != nil
}

// Endpoints returns the client endpoints, for clientv3.Config.Endpoints.
func (e *Etcd) Endpoints() []string { return []string{e.ClientURL} }

// Port returns the client port.
func (e *Etcd) Port() int {
	i := strings.LastIndexByte(e.ClientURL, ':')
	p, _ := strconv.Atoi(e.ClientURL[i+1:])
	return p
}

// ClientConfig returns a client configuration for this server: its
// endpoints, the client certificate with WithEtcdTLS, and the root
// credentials once EnableAuth was called.
func (e *Etcd) ClientConfig(t testing.TB) clientv3.Config {
	t.Helper()
	cfg := clientv3.Config{
		Endpoints:   e.Endpoints(),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	}
	if e.TLS != nil {
		tc, err := e.TLS.ClientConfig()
		if err != nil {
			t.Fatalf("testenv: etcd client TLS config: %v", err)
		}
		cfg.TLS = tc
	}
	e.mu.Lock()
	auth := e.auth
	e.mu.Unlock()
	if auth != nil {
		cfg.Username, cfg.Password = "root", auth.RootPassword
	}
	return cfg
}

// Client returns a client for this server, as root once auth is enabled. It
// is closed by t.Cleanup.
func (e *Etcd) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	return newEtcdClient(t, e.ClientConfig(t))
}

// ClientAs returns a client that authenticates as user with password (and
// presents the client certificate with WithEtcdTLS). It is closed by
// t.Cleanup.
func (e *Etcd) ClientAs(t testing.TB, user, password string) *clientv3.Client {
	t.Helper()
	cfg := e.ClientConfig(t)
	cfg.Username, cfg.Password = user, password
	return newEtcdClient(t, cfg)
}

func newEtcdClient(t testing.TB, cfg clientv3.Config) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(cfg)
	if err != nil {
		t.Fatalf("testenv: etcd client for %v: %v", cfg.Endpoints, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// EtcdAuth describes what EnableAuth set up.
type EtcdAuth struct {
	RootPassword string // password of user "root" (role "root")
	User         string
	Password     string
	Role         string // role of User: readwrite on Prefix
	Prefix       string
}

// EnableAuth turns on etcd authentication through the client API: it creates
// user "root" (role root) with a generated password, a role "<user>-role"
// with readwrite permission on every key starting with prefix, and user with
// password holding that role, then enables auth. Afterwards Client
// authenticates as root; use ClientAs for the restricted user.
func (e *Etcd) EnableAuth(t testing.TB, user, password, prefix string) *EtcdAuth {
	t.Helper()
	a := &EtcdAuth{
		RootPassword: "root-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		User:         user,
		Password:     password,
		Role:         user + "-role",
		Prefix:       prefix,
	}
	c := e.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	steps := []struct {
		what string
		do   func() error
	}{
		{"add user root", func() error { _, err := c.UserAdd(ctx, "root", a.RootPassword); return err }},
		{"grant role root to root", func() error { _, err := c.UserGrantRole(ctx, "root", "root"); return err }},
		{"add role " + a.Role, func() error { _, err := c.RoleAdd(ctx, a.Role); return err }},
		{"grant readwrite on " + strconv.Quote(prefix), func() error {
			end := clientv3.GetPrefixRangeEnd(prefix)
			if prefix == "" {
				end = "\x00" // every key
			}
			_, err := c.RoleGrantPermission(ctx, a.Role, prefix, end, clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		}},
		{"add user " + user, func() error { _, err := c.UserAdd(ctx, user, password); return err }},
		{"grant role to " + user, func() error { _, err := c.UserGrantRole(ctx, user, a.Role); return err }},
		{"enable auth", func() error { _, err := c.AuthEnable(ctx); return err }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("testenv: etcd auth: %s: %v", s.what, err)
		}
	}
	e.mu.Lock()
	e.auth = a
	e.mu.Unlock()
	return a
}
