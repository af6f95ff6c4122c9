package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustPut(t *testing.T, c *clientv3.Client, k, v string) {
	t.Helper()
	if _, err := c.Put(ctxT(t), k, v); err != nil {
		t.Fatalf("put %s: %v", k, err)
	}
}

func mustGet(t *testing.T, c *clientv3.Client, k, want string) {
	t.Helper()
	resp, err := c.Get(ctxT(t), k)
	if err != nil {
		t.Fatalf("get %s: %v", k, err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != want {
		t.Fatalf("get %s = %v, want %q", k, resp.Kvs, want)
	}
}

func TestEtcdPlainRestart(t *testing.T) {
	t.Parallel()
	start := time.Now()
	e := StartEtcd(t)
	t.Logf("etcd started in %v at %s", time.Since(start).Round(time.Millisecond), e.ClientURL)
	if !strings.HasPrefix(e.ClientURL, "http://127.0.0.1:") || e.TLS != nil {
		t.Fatalf("ClientURL = %s, TLS = %v", e.ClientURL, e.TLS)
	}
	c := e.Client(t)
	mustPut(t, c, "/gatewaydns/a", "1")

	url := e.ClientURL
	start = time.Now()
	e.Restart()
	t.Logf("etcd restarted in %v", time.Since(start).Round(time.Millisecond))
	if e.ClientURL != url || !e.Running() {
		t.Fatalf("after restart: url %s (was %s), running %v", e.ClientURL, url, e.Running())
	}
	// The client made before the restart reconnects.
	mustGet(t, c, "/gatewaydns/a", "1")

	// A crash (SIGKILL) loses nothing acknowledged either... with
	// --unsafe-no-fsync only the page cache holds it, which survives a
	// process crash.
	mustPut(t, c, "/gatewaydns/b", "2")
	e.Kill()
	if e.Running() {
		t.Fatal("running after Kill")
	}
	e.Restart()
	mustGet(t, e.Client(t), "/gatewaydns/b", "2")
	e.Stop()
	e.Stop() // idempotent
}

func TestEtcdTLS(t *testing.T) {
	t.Parallel()
	e := StartEtcd(t, WithEtcdTLS())
	if !strings.HasPrefix(e.ClientURL, "https://127.0.0.1:") {
		t.Fatalf("ClientURL = %s", e.ClientURL)
	}
	for _, f := range []string{e.TLS.CAFile, e.TLS.CAKeyFile, e.TLS.ServerCertFile, e.TLS.ServerKeyFile, e.TLS.ClientCertFile, e.TLS.ClientKeyFile} {
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
	}
	c := e.Client(t)
	mustPut(t, c, "/tls/k", "v")

	// Without a client certificate the server refuses us.
	tc, err := e.TLS.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	tc.Certificates = nil
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 5 * time.Second}
	if err := checkHealth(hc, e.ClientURL+"/health"); err == nil {
		t.Fatal("health check without a client certificate succeeded")
	}

	e.Restart()
	mustGet(t, c, "/tls/k", "v")
}

func TestEtcdAuth(t *testing.T) {
	t.Parallel()
	e := StartEtcd(t, WithEtcdTLS())
	mustPut(t, e.Client(t), "/outside", "x")
	a := e.EnableAuth(t, "gatewaydns", "secret", "/gatewaydns/")
	if a.RootPassword == "" || a.Role != "gatewaydns-role" {
		t.Fatalf("auth = %+v", a)
	}

	u := e.ClientAs(t, "gatewaydns", "secret")
	mustPut(t, u, "/gatewaydns/zone/a", "1")
	mustGet(t, u, "/gatewaydns/zone/a", "1")
	if _, err := u.Get(ctxT(t), "/outside"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Fatalf("get outside the prefix: err = %v, want permission denied", err)
	}
	// The client authenticates when it is made: a wrong password fails there.
	bad := e.ClientConfig(t)
	bad.Username, bad.Password = "gatewaydns", "wrong"
	if c, err := clientv3.New(bad); err == nil {
		c.Close()
		t.Fatal("wrong password accepted")
	} else if !errors.Is(err, rpctypes.ErrAuthFailed) {
		t.Fatalf("wrong password: err = %v, want %v", err, rpctypes.ErrAuthFailed)
	}
	// Client is root now.
	mustGet(t, e.Client(t), "/outside", "x")

	e.Restart() // auth survives, and the health check copes with it
	mustGet(t, u, "/gatewaydns/zone/a", "1")
}

// fakeTB records Fatal and Skip instead of ending the real test.
type fakeTB struct {
	testing.TB
	mu              sync.Mutex
	failed, skipped bool
	msg             string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatal(args ...any) {
	f.mu.Lock()
	f.failed, f.msg = true, fmt.Sprint(args...)
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fakeTB) Skip(args ...any) {
	f.mu.Lock()
	f.skipped, f.msg = true, fmt.Sprint(args...)
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fakeTB) Skipf(format string, args ...any) { f.Skip(fmt.Sprintf(format, args...)) }

func runFake(t *testing.T, name string) *fakeTB {
	return runFakeWith(t, func(tb testing.TB) { FindBinary(tb, name) })
}

// runFakeWith runs find with a fakeTB, in a goroutine that Fatal and Skip can end.
func runFakeWith(t *testing.T, find func(testing.TB)) *fakeTB {
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		find(f)
	}()
	<-done
	return f
}

// A tool binary missing skips a plain `go test`, and fails a run that names the binaries'
// directory (make test), even when the tool is on PATH elsewhere.
func TestToolBinarySkipsOnlyWithoutTheBinariesDirectory(t *testing.T) {
	find := func(tb testing.TB) { ToolBinary(tb, "no-such-tool", "hack/build-no-such-tool.sh") }
	t.Setenv(EnvSkipIntegration, "")
	t.Setenv(EnvTestBin, "")
	if f := runFakeWith(t, find); !f.skipped || f.failed || !strings.Contains(f.msg, "hack/build-no-such-tool.sh") {
		t.Errorf("without $%s: skipped=%v failed=%v msg=%q, want a skip that names the build script", EnvTestBin, f.skipped, f.failed, f.msg)
	}
	t.Setenv(EnvTestBin, t.TempDir())
	if f := runFakeWith(t, find); !f.failed || f.skipped {
		t.Errorf("with $%s: skipped=%v failed=%v, want a failure", EnvTestBin, f.skipped, f.failed)
	}
}

func TestFindBinary(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/fake-bin", []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvTestBin, dir)
	t.Setenv(EnvSkipIntegration, "")
	if got := FindBinary(t, "fake-bin"); got != dir+"/fake-bin" {
		t.Fatalf("FindBinary = %s", got)
	}
	if root, err := RepoRoot(); err != nil || !isRootModule(root+"/go.mod") {
		t.Fatalf("RepoRoot = %s, %v", root, err)
	}

	f := runFake(t, "no-such-binary")
	if !f.failed || !strings.Contains(f.msg, "make test-binaries") {
		t.Fatalf("missing binary: failed=%v msg=%q", f.failed, f.msg)
	}
	t.Setenv(EnvSkipIntegration, "1")
	f = runFake(t, "no-such-binary")
	if !f.skipped || f.failed {
		t.Fatalf("missing binary with %s=1: skipped=%v failed=%v", EnvSkipIntegration, f.skipped, f.failed)
	}
}

const gwGV = "gateway.networking.k8s.io/v1"

func TestKubeAPIServer(t *testing.T) {
	k := StartKubeAPIServer(t, WithoutCRDs("TLSRoute"))
	ctx := ctxT(t)

	gw, err := gwclient.NewForConfig(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	routes, err := gw.GatewayV1().HTTPRoutes("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list HTTPRoutes: %v", err)
	}
	if len(routes.Items) != 0 {
		t.Fatalf("HTTPRoutes = %v", routes.Items)
	}
	hr := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: gatewayv1.HTTPRouteSpec{
			Hostnames: []gatewayv1.Hostname{"www.example.com"},
		},
	}
	if _, err := gw.GatewayV1().HTTPRoutes("default").Create(ctx, hr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create HTTPRoute: %v", err)
	}

	// TLSRoute was left out: not in discovery, and listing it fails.
	if !k.Served(t, gwGV, "httproutes") || !k.Served(t, gwGV, "tcproutes") {
		t.Fatal("httproutes/tcproutes not served")
	}
	if k.Served(t, gwGV, "tlsroutes") {
		t.Fatal("tlsroutes served although left out")
	}
	if _, err := gw.GatewayV1().TLSRoutes("default").List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("list TLSRoutes without the CRD: err = %v, want NotFound", err)
	}
	// Standard channel: TCPRoute serves v1 only.
	if k.Served(t, "gateway.networking.k8s.io/v1alpha2", "tcproutes") {
		t.Fatal("v1alpha2 tcproutes served by the standard channel")
	}

	// The kubeconfig file works and sees the route.
	cfg, err := clientcmd.BuildConfigFromFlags("", k.KubeconfigFile)
	if err != nil {
		t.Fatal(err)
	}
	gw2, err := gwclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := gw2.GatewayV1().HTTPRoutes("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || len(got.Spec.Hostnames) != 1 || got.Spec.Hostnames[0] != "www.example.com" {
		t.Fatalf("get HTTPRoute through the kubeconfig: %v %v", got, err)
	}

	// A CRD appearing at run time.
	start := time.Now()
	k.InstallCRD(t, "TLSRoute")
	t.Logf("TLSRoute CRD installed in %v", time.Since(start).Round(time.Millisecond))
	if !k.Served(t, gwGV, "tlsroutes") {
		t.Fatal("tlsroutes not served after InstallCRD")
	}
	if _, err := gw.GatewayV1().TLSRoutes("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list TLSRoutes: %v", err)
	}
	// ... and disappearing.
	k.UninstallCRD(t, "grpcroutes")
	if k.Served(t, gwGV, "grpcroutes") {
		t.Fatal("grpcroutes served after UninstallCRD")
	}

	// RBAC: a user without bindings is forbidden.
	uc := k.UserConfig(t, "system:serviceaccount:default:gatewaydns", "system:serviceaccounts")
	ugw, err := gwclient.NewForConfig(uc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ugw.GatewayV1().HTTPRoutes("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("unbound user lists HTTPRoutes: err = %v, want Forbidden", err)
	}
	if _, err := clientcmd.BuildConfigFromFlags("", k.UserKubeconfig(t, "someone")); err != nil {
		t.Fatal(err)
	}

	sv, err := gw.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server version %s", sv.GitVersion)
	if !strings.HasPrefix(sv.GitVersion, "v1.") {
		t.Fatalf("server version %q", sv.GitVersion)
	}
	start = time.Now()
	k.Stop()
	t.Logf("kube-apiserver stopped in %v", time.Since(start).Round(time.Millisecond))
}

func TestKubeAPIServerExperimental(t *testing.T) {
	k := StartKubeAPIServer(t, WithExperimentalCRDs(), WithoutCRDs("UDPRoute", "xmeshes"))
	if !k.Served(t, "gateway.networking.k8s.io/v1alpha2", "tcproutes") {
		t.Fatal("experimental channel: v1alpha2 tcproutes not served")
	}
	if k.Served(t, gwGV, "udproutes") {
		t.Fatal("udproutes served although left out")
	}
	gw, err := gwclient.NewForConfig(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gw.GatewayV1alpha2().TCPRoutes("default").List(ctxT(t), metav1.ListOptions{}); err != nil {
		t.Fatalf("list v1alpha2 TCPRoutes: %v", err)
	}
}
