package deploy

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/gatewaydns/gatewaydns/internal/docblocks"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/kustomize"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// chartExample is one values file of deploy/chart/examples and what it must render the same as.
type chartExample struct {
	values  string // examples/<values>.yaml
	overlay string // deploy/overlays/<overlay>, or "" for none
	rbac    string // deploy/<rbac> whose objects the chart's gatewaydns RBAC must be, or ""
	extras  []string
}

var chartExamples = []chartExample{
	{values: "workload", overlay: "workload", rbac: "rbac-gatewaydns",
		extras: []string{"PrometheusRule.monitoring.coreos.com kube-system/gatewaydns", "ConfigMap kube-system/gatewaydns-dashboard",
			"ServiceMonitor.monitoring.coreos.com kube-system/gatewaydns"}},
	{values: "central", overlay: "central"},
	{values: "workload-plain-http", overlay: "workload-plain-http", rbac: "rbac-gatewaydns"},
	{values: "central-plain-http", overlay: "central-plain-http"},
	{values: "workload-namespaced", rbac: "rbac-gatewaydns-namespaced"},
}

// helm runs bin/helm (hack/build-helm.sh) with its caches and configuration in the test's
// directory, never the user's.
func helm(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := helmRun(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// helmRun is helm that returns its failure, with what it wrote to stderr.
func helmRun(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	bin := testenv.ToolBinary(t, "helm", "hack/build-helm.sh")
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%w\n%s%s", err, out, stderr.String())
	}
	return out, nil
}

func chartDir(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "deploy", "chart")
}

// renderChart is `helm template` of the chart in kube-system with examples/<values>.yaml, and
// the values of more (YAML) over them.
func renderChart(t *testing.T, values string, more ...string) []*unstructured.Unstructured {
	t.Helper()
	return renderChartIn(t, "kube-system", values, more...)
}

// renderChartIn is renderChart in the namespace ns.
func renderChartIn(t *testing.T, ns, values string, more ...string) []*unstructured.Unstructured {
	t.Helper()
	return parseRendered(t, values, helm(t, chartArgs(t, ns, values, more...)...))
}

// chartArgs are helm template's arguments for renderChartIn.
func chartArgs(t *testing.T, ns, values string, more ...string) []string {
	t.Helper()
	dir := chartDir(t)
	args := []string{"template", "gatewaydns", dir, "--namespace", ns, "-f", filepath.Join(dir, "examples", values+".yaml")}
	for i, m := range more {
		f := filepath.Join(t.TempDir(), fmt.Sprintf("more-%d.yaml", i))
		if err := os.WriteFile(f, []byte(m), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-f", f)
	}
	return args
}

func parseRendered(t *testing.T, values string, out []byte) []*unstructured.Unstructured {
	t.Helper()
	f := filepath.Join(t.TempDir(), "rendered.yaml")
	if err := os.WriteFile(f, out, 0o600); err != nil {
		t.Fatal(err)
	}
	objs, err := kustomize.ReadYAMLObjects(f)
	if err != nil {
		t.Fatalf("helm template -f examples/%s.yaml: %v", values, err)
	}
	return objs
}

var corefileComment = regexp.MustCompile(`(?m)^\s*#.*\n|^\s*\n`)

// comparableDeploy is objs with what may differ between the chart and the overlays made equal:
// the Corefile's comments, the generated ConfigMap's hash (each checked to be the one its
// Deployment mounts), the order of the env list (a patch merges it in its own order), and
// where a value reaches the Corefile: the overlays' Corefile reads the etcd endpoints from the
// Deployment's environment ({$GATEWAYDNS_ETCD_ENDPOINTS}, one value), the chart's lists them
// (a list of members), so each Corefile is compared with the Deployment's variables put in,
// as CoreDNS reads it, and without the variables it read. The Secret gatewaydns-etcd is left
// out: the overlays generate a stub of it, the chart takes an existing one (etcd.tlsSecret).
// Kinds outside keep are left out.
func comparableDeploy(t *testing.T, objs []*unstructured.Unstructured, keep func(*unstructured.Unstructured) bool) []*unstructured.Unstructured {
	t.Helper()
	objs = withCorefileVariables(t, objs)
	var out []*unstructured.Unstructured
	var generated string
	for _, o := range objs {
		if !keep(o) || o.GetKind() == "Secret" && o.GetName() == "gatewaydns-etcd" {
			continue
		}
		o = o.DeepCopy()
		if isCorefileConfigMap(o) {
			generated = o.GetName()
			o.SetName("coredns-HASH")
			cf, _, _ := unstructured.NestedString(o.Object, "data", "Corefile")
			_ = unstructured.SetNestedField(o.Object, corefileComment.ReplaceAllString(cf, ""), "data", "Corefile")
		}
		if o.GetKind() == "Deployment" && o.GetName() == "coredns" {
			vols, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
			for _, v := range vols {
				cm, ok := v.(map[string]any)["configMap"].(map[string]any)
				if !ok || v.(map[string]any)["name"] != "config-volume" {
					continue
				}
				if cm["name"] != generated && generated != "" {
					t.Errorf("the Deployment mounts ConfigMap %v, the Corefile is in %s", cm["name"], generated)
				}
				cm["name"] = "coredns-HASH"
			}
			_ = unstructured.SetNestedSlice(o.Object, vols, "spec", "template", "spec", "volumes")
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, c := range cs {
				c := c.(map[string]any)
				env, _ := c["env"].([]any)
				slices.SortFunc(env, func(a, b any) int {
					return strings.Compare(a.(map[string]any)["name"].(string), b.(map[string]any)["name"].(string))
				})
			}
			_ = unstructured.SetNestedSlice(o.Object, cs, "spec", "template", "spec", "containers")
		}
		out = append(out, o)
	}
	return out
}

// isCorefileConfigMap: o is the ConfigMap coredns-<hash> that holds the Corefile.
func isCorefileConfigMap(o *unstructured.Unstructured) bool {
	_, corefile, _ := unstructured.NestedString(o.Object, "data", "Corefile")
	return o.GetKind() == "ConfigMap" && strings.HasPrefix(o.GetName(), "coredns-") && corefile
}

// withCorefileVariables is objs with the coredns ConfigMap's Corefile read as CoreDNS reads it:
// each {$NAME} of a variable of the Deployment coredns's container replaced by its value, and
// those variables left out of the container's env.
func withCorefileVariables(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	var cm, deploy *unstructured.Unstructured
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
		switch {
		case isCorefileConfigMap(o):
			cm = out[i]
		case o.GetKind() == "Deployment" && o.GetName() == "coredns":
			deploy = out[i]
		}
	}
	if cm == nil || deploy == nil {
		return out
	}
	corefile, _, _ := unstructured.NestedString(cm.Object, "data", "Corefile")
	cs, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		c := c.(map[string]any)
		env, _ := c["env"].([]any)
		var kept []any
		for _, e := range env {
			e := e.(map[string]any)
			name, _ := e["name"].(string)
			value, literal := e["value"].(string)
			if ref := "{$" + name + "}"; literal && strings.Contains(corefile, ref) {
				corefile = strings.ReplaceAll(corefile, ref, value)
				continue
			}
			kept = append(kept, e)
		}
		c["env"] = kept
	}
	_ = unstructured.SetNestedSlice(deploy.Object, cs, "spec", "template", "spec", "containers")
	_ = unstructured.SetNestedField(cm.Object, corefile, "data", "Corefile")
	return out
}

func isRBAC(o *unstructured.Unstructured) bool {
	return o.GroupVersionKind().Group == "rbac.authorization.k8s.io" && !strings.HasPrefix(o.GetName(), "system:")
}

// The chart renders, for each example values file, the objects of the matching Kustomize
// overlay (same kinds, names, RBAC rules, Corefile, Deployment), plus only the monitoring
// objects it is asked for; and helm lint passes on it with each, its values schema included.
// Without values it lints as it installs: refused, for the values a release must give.
func TestChartRendersTheOverlays(t *testing.T) {
	dir := chartDir(t)
	_, err := helmRun(t, "lint", "--strict", dir)
	for _, want := range []string{"at '/etcd/endpoints': minItems: got 0, want 1", "missing properties 'owner', 'domainFilter', 'central'"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("helm lint without values: %v, want it refused with %q", err, want)
		}
	}
	for _, ex := range chartExamples {
		t.Run(ex.values, func(t *testing.T) {
			helm(t, "lint", "--strict", dir, "-f", filepath.Join(dir, "examples", ex.values+".yaml"))
			chart := renderChart(t, ex.values)
			if ex.overlay != "" {
				overlay := renderOverlay(t, ex.overlay)
				inOverlay := map[string]bool{}
				for _, o := range overlay {
					inOverlay[kustomize.ID(o)] = true
				}
				var extras []string
				for _, o := range chart {
					if !inOverlay[kustomize.ID(o)] && !isCorefileConfigMap(o) {
						extras = append(extras, kustomize.ID(o))
					}
				}
				if !slices.Equal(slices.Sorted(slices.Values(extras)), slices.Sorted(slices.Values(ex.extras))) {
					t.Errorf("the chart adds %q to the overlay's objects, want %q", extras, ex.extras)
				}
				notExtra := func(o *unstructured.Unstructured) bool { return !slices.Contains(ex.extras, kustomize.ID(o)) }
				for _, d := range kustomize.Diff(comparableDeploy(t, chart, notExtra), comparableDeploy(t, overlay, notExtra)) {
					t.Errorf("chart vs overlays/%s: %s", ex.overlay, d)
				}
			}
			if ex.rbac != "" {
				want, err := kustomize.Render(filepath.Join(filepath.Dir(dir), ex.rbac))
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range kustomize.Diff(comparableDeploy(t, chart, isRBAC), comparableDeploy(t, want, isRBAC)) {
					t.Errorf("chart vs %s: %s", ex.rbac, d)
				}
			}
		})
	}
}

// The chart's copies of deploy/monitoring are the files themselves (helm reads nothing outside
// the chart, and no symlink): `make chart-files` copies them after a change there.
func TestChartMonitoringIsDeployMonitoring(t *testing.T) {
	dir := chartDir(t)
	for _, name := range []string{"alerts.yaml", "dashboard.json"} {
		want, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "monitoring", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "files", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("deploy/chart/files/%s is not deploy/monitoring/%s (%v): run `make chart-files`", name, name, err)
		}
	}
	// And the chart puts them in its objects whole.
	objs := renderChart(t, "workload")
	var rules map[string]any
	alerts, _ := os.ReadFile(filepath.Join(filepath.Dir(dir), "monitoring", "alerts.yaml"))
	if err := yaml.Unmarshal(alerts, &rules); err != nil {
		t.Fatal(err)
	}
	if spec := findObj(t, objs, "PrometheusRule", "gatewaydns").Object["spec"]; !reflect.DeepEqual(spec, rules) {
		t.Errorf("the PrometheusRule's spec is not deploy/monitoring/alerts.yaml")
	}
	dashboard, _ := os.ReadFile(filepath.Join(filepath.Dir(dir), "monitoring", "dashboard.json"))
	got, _, _ := unstructured.NestedString(findObj(t, objs, "ConfigMap", "gatewaydns-dashboard").Object, "data", "gatewaydns.json")
	if strings.TrimSpace(got) != strings.TrimSpace(string(dashboard)) {
		t.Errorf("the dashboard ConfigMap does not hold deploy/monitoring/dashboard.json")
	}
}

// prometheusOperatorCRDs is where the Prometheus Operator's CRDs for the chart's monitoring
// kinds are kept, as its release ships them (testdata/prometheus-operator-crds/README.md): the
// kube-apiserver checks a ServiceMonitor, PodMonitor or PrometheusRule against their schemas.
var prometheusOperatorCRDs = filepath.Join("testdata", "prometheus-operator-crds")

// Every object of every example, and of the chart with every optional value set, is accepted
// by a real kube-apiserver holding the Prometheus Operator's CRDs: server-side apply, dry run,
// strict field validation.
func TestChartDryRunApplies(t *testing.T) {
	rendered := map[string][]*unstructured.Unstructured{}
	for _, ex := range chartExamples {
		rendered[ex.values] = renderChart(t, ex.values)
	}
	for _, v := range chartValues {
		rendered[v.name] = renderChart(t, v.example, v.values)
	}
	k := testenv.StartKubeAPIServer(t)
	crds, err := envtest.InstallCRDs(k.Config, envtest.CRDInstallOptions{Paths: []string{prometheusOperatorCRDs}, ErrorIfPathMissing: true, MaxTime: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 3 {
		t.Fatalf("installed %d CRDs from %s, want ServiceMonitor, PodMonitor and PrometheusRule", len(crds), prometheusOperatorCRDs)
	}
	// The namespaces the namespaced RBAC example names, as a cluster would have them.
	for _, ns := range []string{"team-a", "infra"} {
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
		applyObjects(t, k.Config, []*unstructured.Unstructured{o}, false)
	}
	for _, name := range slices.Sorted(maps.Keys(rendered)) {
		t.Run(name, func(t *testing.T) { dryRunApply(t, k.Config, rendered[name]) })
	}
	t.Run("DeployREADMEPipeline", func(t *testing.T) { deployREADMEPipeline(t, k.KubeconfigFile) })
	if t.Failed() {
		return
	}
	// The overlays' Corefiles and RBAC run in TestDeploy; the namespaced variant is the chart's
	// own: the binary runs its Corefile with only its RBAC and becomes ready (every informer of
	// the namespaces it names synced, nothing cluster-wide refused), with a stub domain and a
	// server block of its own, which answers.
	t.Run("NamespacedCorefileRuns", func(t *testing.T) {
		e := testenv.StartEtcd(t, testenv.WithEtcdTLS())
		objs := renderChart(t, "workload-namespaced", fmt.Sprintf("etcd: {endpoints: [%q]}", e.ClientURL), `stubDomains: {corp.example: [127.0.0.1:9]}
extraServerBlocks:
  - zones: [{zone: example.org.}]
    plugins:
      - name: errors
      - name: hosts
        configBlock: |
          192.0.2.1 www.example.org
`)
		k.InstallDNSEndpointCRD(t)
		var rbac []*unstructured.Unstructured
		for _, o := range objs {
			if o.GroupVersionKind().Group == "rbac.authorization.k8s.io" || o.GetKind() == "ServiceAccount" {
				rbac = append(rbac, o)
			}
		}
		applyObjects(t, k.Config, rbac, false)
		wl, _ := runDeployedCorefile(t, "workload-namespaced", objs, etcdCertsDir(t, e), k.UserKubeconfig(t, saName, saGroups...),
			map[string]string{"GATEWAYDNS_CENTRAL": "127.0.0.1:9"})
		wl.WaitReady(t, 60*time.Second)
		e2e.WaitFor(t, 5*time.Second, wl.DNS, "www.example.org.", dns.TypeA, e2e.AnswersWith("192.0.2.1"))
	})
}

// deployREADMEPipeline runs deploy/README.md's helm template | kubectl apply as written, with
// examples/workload.yaml for my-values.yaml, against the test's kube-apiserver, dry run.
func deployREADMEPipeline(t *testing.T, kubeconfig string) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	pipeline, err := docblocks.Command(filepath.Join(filepath.Dir(chartDir(t)), "README.md"), "helm template gatewaydns deploy/chart")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cmd := strings.NewReplacer("helm template", testenv.ToolBinary(t, "helm", "hack/build-helm.sh")+" template",
		"my-values.yaml", filepath.Join(chartDir(t), "examples", "workload.yaml"),
		"kubectl apply", "kubectl --kubeconfig "+kubeconfig+" apply --dry-run=server").Replace(pipeline)
	sh := exec.Command("bash", "-o", "pipefail", "-c", cmd)
	sh.Dir = filepath.Dir(filepath.Dir(chartDir(t)))
	sh.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	out, err := sh.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "deployment.apps/coredns serverside-applied (server dry run)") {
		t.Errorf("%s: %v\n%s", cmd, err, out)
	}
}

// dryRunApply applies objs server-side with a dry run and strict field validation.
func dryRunApply(t *testing.T, cfg *rest.Config, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := metav1.ApplyOptions{FieldManager: "helm", Force: true, DryRun: []string{metav1.DryRunAll}}
	for _, o := range objs {
		ri := objectClient(t, cfg, o)
		var err error
		for attempt := 0; ; attempt++ {
			var body []byte
			if body, err = yaml.Marshal(o.Object); err != nil {
				break
			}
			_, err = ri.Patch(ctx, o.GetName(), "application/apply-patch+yaml", body, metav1.PatchOptions{
				FieldManager: opts.FieldManager, Force: &opts.Force, DryRun: opts.DryRun,
				FieldValidation: metav1.FieldValidationStrict,
			})
			// kube-system is created by the API server shortly after it starts.
			if err != nil && apierrors.IsNotFound(err) && attempt < 50 {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			break
		}
		if err != nil {
			t.Errorf("%s: server-side dry-run apply refused: %v", kustomize.ID(o), err)
		}
	}
}
