package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Kube is a kube-apiserver (with its own etcd) started by
// StartKubeAPIServer through controller-runtime's envtest. There is no
// controller manager or scheduler: objects are stored and served, nothing
// reconciles them (no namespace deletion, no EndpointSlices made for
// Services, ...).
type Kube struct {
	// Config is an admin (system:masters) client configuration.
	Config *rest.Config
	// KubeconfigFile is a kubeconfig file for the same admin user, e.g. for
	// the Corefile's `kubeconfig FILE` option.
	KubeconfigFile string
	// Dir is the temporary directory holding the kubeconfig and the logs.
	Dir string
	// LogFile receives kube-apiserver's output; EtcdLogFile etcd's.
	LogFile     string
	EtcdLogFile string
	// Channel is the Gateway API channel the CRDs come from.
	Channel CRDChannel
	// Env is the underlying envtest environment.
	Env *envtest.Environment

	t       testing.TB
	all     []*apiextensionsv1.CustomResourceDefinition // every CRD of Channel
	mu      sync.Mutex
	stopped bool
}

// KubeOption configures StartKubeAPIServer.
type KubeOption func(*kubeOptions)

type kubeOptions struct {
	channel CRDChannel
	without []string
	noCRDs  bool
	flags   map[string][]string
}

// WithCRDChannel selects the Gateway API CRD set (default CRDStandard).
func WithCRDChannel(c CRDChannel) KubeOption { return func(o *kubeOptions) { o.channel = c } }

// WithExperimentalCRDs is WithCRDChannel(CRDExperimental).
func WithExperimentalCRDs() KubeOption { return WithCRDChannel(CRDExperimental) }

// WithoutCRDs leaves out the CRDs of these kinds (or plural or full CRD
// names, case-insensitive), e.g. "TLSRoute", "GRPCRoute", to test a cluster
// that lacks them. Kube.InstallCRD can add one later. An unknown name fails
// the test.
func WithoutCRDs(kinds ...string) KubeOption {
	return func(o *kubeOptions) { o.without = append(o.without, kinds...) }
}

// WithoutGatewayAPICRDs installs no Gateway API CRD at all.
func WithoutGatewayAPICRDs() KubeOption { return func(o *kubeOptions) { o.noCRDs = true } }

// WithAPIServerFlag sets a kube-apiserver flag (name without dashes),
// replacing envtest's default for it, e.g.
// WithAPIServerFlag("feature-gates", "SomeGate=true").
func WithAPIServerFlag(name string, values ...string) KubeOption {
	return func(o *kubeOptions) {
		if o.flags == nil {
			o.flags = map[string][]string{}
		}
		o.flags[strings.TrimLeft(name, "-")] = values
	}
}

// StartKubeAPIServer starts etcd and kube-apiserver (binaries found with
// FindBinary) on free loopback ports with envtest, installs the Gateway API
// CRDs of the chosen channel (minus WithoutCRDs) and waits until they are
// served. Authorization is RBAC; Config and KubeconfigFile are for an admin
// in system:masters, UserConfig gives other identities. It is stopped by
// t.Cleanup; when the test failed, the tails of the logs are printed.
func StartKubeAPIServer(t testing.TB, opts ...KubeOption) *Kube {
	t.Helper()
	o := kubeOptions{channel: CRDStandard}
	for _, opt := range opts {
		opt(&o)
	}
	apiserverBin := FindBinary(t, "kube-apiserver")
	etcdBin := FindBinary(t, "etcd")

	all, err := GatewayAPICRDs(o.channel)
	if err != nil {
		t.Fatalf("testenv: Gateway API CRDs: %v", err)
	}
	var install []*apiextensionsv1.CustomResourceDefinition
	if !o.noCRDs {
		skip := map[*apiextensionsv1.CustomResourceDefinition]bool{}
		for _, name := range o.without {
			found := false
			for _, c := range all {
				if crdMatches(c, name) {
					skip[c], found = true, true
				}
			}
			if !found {
				t.Fatalf("testenv: WithoutCRDs(%q): no such CRD in the %s channel (have %v)", name, o.channel, crdKinds(all))
			}
		}
		for _, c := range all {
			if !skip[c] {
				install = append(install, c.DeepCopy())
			}
		}
	}

	quietControllerRuntime()

	dir := t.TempDir()
	k := &Kube{
		Dir:         dir,
		LogFile:     filepath.Join(dir, "kube-apiserver.log"),
		EtcdLogFile: filepath.Join(dir, "etcd.log"),
		Channel:     o.channel,
		t:           t,
		all:         all,
	}
	apiLog, err := os.Create(k.LogFile)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	etcdLog, err := os.Create(k.EtcdLogFile)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	logOnFailure(t, "kube-apiserver's etcd", k.EtcdLogFile)
	logOnFailure(t, "kube-apiserver", k.LogFile)
	t.Cleanup(func() {
		apiLog.Close()
		etcdLog.Close()
	})

	env := &envtest.Environment{
		BinaryAssetsDirectory:    filepath.Dir(apiserverBin),
		CRDs:                     install,
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	// A fixed certificate directory, so that StartAPIServer after StopAPIServer serves with the
	// certificates that clients already trust.
	certDir := filepath.Join(dir, "apiserver")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	env.ControlPlane.APIServer = &envtest.APIServer{Path: apiserverBin, Out: apiLog, Err: apiLog, CertDir: certDir}
	env.ControlPlane.Etcd = &envtest.Etcd{Path: etcdBin, Out: etcdLog, Err: etcdLog}
	env.ControlPlane.Etcd.Configure().
		Set("log-level", "warn").
		Set("heartbeat-interval", "50").
		Set("election-timeout", "500")
	args := env.ControlPlane.APIServer.Configure()
	for name, values := range o.flags {
		args.Set(name, values...)
	}
	k.Env = env

	start := time.Now()
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		t.Fatalf("testenv: starting kube-apiserver: %v\nkube-apiserver log:\n%s", err, LogTail(k.LogFile, 40))
	}
	t.Cleanup(k.Stop)
	t.Logf("testenv: kube-apiserver at %s ready in %v (%s CRDs: %v)", cfg.Host, time.Since(start).Round(time.Millisecond), o.channel, crdKinds(install))
	k.Config = rest.CopyConfig(cfg)

	k.KubeconfigFile = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(k.KubeconfigFile, env.KubeConfig, 0o600); err != nil {
		t.Fatalf("testenv: writing kubeconfig: %v", err)
	}
	return k
}

// Stop stops kube-apiserver and its etcd. It is called by t.Cleanup too;
// stopping twice does nothing.
func (k *Kube) Stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	k.stopped = true
	if err := k.Env.Stop(); err != nil {
		k.t.Errorf("testenv: stopping kube-apiserver: %v", err)
	}
}

// StopAPIServer stops kube-apiserver alone, as a crash or a control-plane upgrade would: its
// etcd keeps the objects, and StartAPIServer brings it back.
func (k *Kube) StopAPIServer(t testing.TB) {
	t.Helper()
	if err := k.Env.ControlPlane.APIServer.Stop(); err != nil {
		t.Fatalf("testenv: stopping kube-apiserver: %v", err)
	}
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the same address and with
// the same certificates, so that clients reconnect with the configuration they have.
func (k *Kube) StartAPIServer(t testing.TB) {
	t.Helper()
	start := time.Now()
	if err := k.Env.ControlPlane.APIServer.Start(); err != nil {
		t.Fatalf("testenv: restarting kube-apiserver: %v\nkube-apiserver log:\n%s", err, LogTail(k.LogFile, 40))
	}
	t.Logf("testenv: kube-apiserver at %s back in %v", k.Config.Host, time.Since(start).Round(time.Millisecond))
}

func (k *Kube) findCRD(t testing.TB, kind string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	for _, c := range k.all {
		if crdMatches(c, kind) {
			return c.DeepCopy()
		}
	}
	t.Fatalf("testenv: no CRD %q in the %s channel (have %v)", kind, k.Channel, crdKinds(k.all))
	return nil
}

// InstallCRD installs the channel's CRD for kind (e.g. "TLSRoute") and waits
// until the API server serves it, to test a CRD that appears at run time.
func (k *Kube) InstallCRD(t testing.TB, kind string) {
	t.Helper()
	crd := k.findCRD(t, kind)
	if _, err := envtest.InstallCRDs(k.Config, envtest.CRDInstallOptions{
		CRDs:    []*apiextensionsv1.CustomResourceDefinition{crd},
		MaxTime: 30 * time.Second,
	}); err != nil {
		t.Fatalf("testenv: installing CRD %s: %v", crd.Name, err)
	}
}

// UninstallCRD deletes the CRD for kind (with all its objects) and waits
// until it is gone, from discovery too, to test a CRD that disappears at run time.
func (k *Kube) UninstallCRD(t testing.TB, kind string) {
	t.Helper()
	crd := k.findCRD(t, kind)
	cs, err := apiextensionsclient.NewForConfig(k.Config)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	crds := cs.ApiextensionsV1().CustomResourceDefinitions()
	if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("testenv: deleting CRD %s: %v", crd.Name, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(k.Config)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	// The API server drops the resource from discovery after the CRD object is gone, not with
	// it: a test that asks discovery next must find it gone.
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if _, err := crds.Get(ctx, crd.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return false, nil
		}
		for _, v := range crd.Spec.Versions {
			list, err := dc.ServerResourcesForGroupVersion(crd.Spec.Group + "/" + v.Name)
			if apierrors.IsNotFound(err) {
				continue // the group version gone with it
			}
			if err != nil {
				return false, nil
			}
			for _, r := range list.APIResources {
				if r.Name == crd.Spec.Names.Plural {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("testenv: CRD %s not gone: %v", crd.Name, err)
	}
}

// Served reports whether the API server's discovery lists the resource
// (plural, e.g. "tlsroutes") in groupVersion (e.g.
// "gateway.networking.k8s.io/v1").
func (k *Kube) Served(t testing.TB, groupVersion, resource string) bool {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(k.Config)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	list, err := dc.ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("testenv: discovery of %s: %v", groupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true
		}
	}
	return false
}

// UserConfig returns a client configuration that authenticates (with a
// client certificate) as user name in groups. Authorization is RBAC, so the
// user can do nothing until the test binds it a role with Config. To act as
// a ServiceAccount, use name "system:serviceaccount:NAMESPACE:NAME" and
// groups "system:serviceaccounts", "system:serviceaccounts:NAMESPACE".
func (k *Kube) UserConfig(t testing.TB, name string, groups ...string) *rest.Config {
	t.Helper()
	u, err := k.Env.AddUser(envtest.User{Name: name, Groups: groups}, &rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		t.Fatalf("testenv: adding user %s: %v", name, err)
	}
	return u.Config()
}

// UserKubeconfig is UserConfig written as a kubeconfig file; it returns the
// file's path.
func (k *Kube) UserKubeconfig(t testing.TB, name string, groups ...string) string {
	t.Helper()
	u, err := k.Env.AddUser(envtest.User{Name: name, Groups: groups}, &rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		t.Fatalf("testenv: adding user %s: %v", name, err)
	}
	data, err := u.KubeConfig()
	if err != nil {
		t.Fatalf("testenv: kubeconfig for %s: %v", name, err)
	}
	safe := strings.Map(func(r rune) rune {
		if r == '/' || r == ':' || r == os.PathSeparator {
			return '_'
		}
		return r
	}, name)
	f, err := os.CreateTemp(k.Dir, "kubeconfig-"+safe+"-*")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return f.Name()
}

var quietOnce sync.Once

// quietControllerRuntime gives controller-runtime (used here only for
// envtest) a logger that discards. Without one, it prints a warning with a
// stack trace to stderr when envtest logs more than 30s after the test binary
// started. A test that wants those logs can call log.SetLogger afterwards.
func quietControllerRuntime() {
	quietOnce.Do(func() { ctrllog.SetLogger(logr.Discard()) })
}

func (k *Kube) String() string { return fmt.Sprintf("kube-apiserver at %s", k.Config.Host) }
