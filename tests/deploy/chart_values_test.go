package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gatewaydns/gatewaydns/internal/kustomize"
)

// The chart's values beyond the overlays': what each does, what is refused, and the release's
// namespace. chart_test.go holds the chart to the overlays and has a kube-apiserver take
// every render, these included.

// chartValue is a value of the chart beyond the overlays', set over an example, and what it
// does to that example's objects: the render with it must be exactly want(the render without).
type chartValue struct {
	name, example string
	values        string // YAML over examples/<example>.yaml
	want          func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured
}

// podSpec sets a field of the Deployment coredns's pod spec (its template's, with meta true).
func podSpec(meta bool, value any, path ...string) func(*testing.T, []*unstructured.Unstructured) []*unstructured.Unstructured {
	return func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
		where := []string{"spec", "template", "spec"}
		if meta {
			where = []string{"spec", "template", "metadata"}
		}
		setField(t, findObj(t, objs, "Deployment", "coredns"), value, append(where, path...)...)
		return objs
	}
}

// coreDNSContainer changes the coredns container.
func coreDNSContainer(change func(c map[string]any)) func(*testing.T, []*unstructured.Unstructured) []*unstructured.Unstructured {
	return func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
		d := findObj(t, objs, "Deployment", "coredns")
		cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		change(cs[0].(map[string]any))
		_ = unstructured.SetNestedSlice(d.Object, cs, "spec", "template", "spec", "containers")
		return objs
	}
}

// corefile changes the Corefile.
func corefile(change func(string) string) func(*testing.T, []*unstructured.Unstructured) []*unstructured.Unstructured {
	return func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
		cm := findObj(t, objs, "ConfigMap", "coredns")
		cf, _, _ := unstructured.NestedString(cm.Object, "data", "Corefile")
		_ = unstructured.SetNestedField(cm.Object, change(cf), "data", "Corefile")
		return objs
	}
}

// withObjects adds objects (YAML documents) and, with noReplicas, leaves the Deployment's
// replicas to an autoscaler.
func withObjects(noReplicas bool, docs string) func(*testing.T, []*unstructured.Unstructured) []*unstructured.Unstructured {
	return func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
		if noReplicas {
			unstructured.RemoveNestedField(findObj(t, objs, "Deployment", "coredns").Object, "spec", "replicas")
		}
		return append(objs, parseRendered(t, "expected", []byte(docs))...)
	}
}

func then(changes ...func(*testing.T, []*unstructured.Unstructured) []*unstructured.Unstructured) func(*testing.T, []*unstructured.Unstructured) []*unstructured.Unstructured {
	return func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
		for _, c := range changes {
			objs = c(t, objs)
		}
		return objs
	}
}

func setField(t *testing.T, o *unstructured.Unstructured, value any, path ...string) {
	t.Helper()
	b, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(o.Object, v, path...); err != nil {
		t.Fatal(err)
	}
}

// chartValues are the chart's values beyond the overlays', each set once: what the CoreDNS
// chart offers (scheduling, pull secrets, extra env and volumes, a fixed kube-dns address,
// stub domains and server blocks, autoscalers, scraping by the Prometheus Operator) and the
// etcd members as a list.
var chartValues = []chartValue{
	{name: "service.clusterIP", example: "workload", values: "service: {clusterIP: 10.0.0.10}", // the test kube-apiserver's range is 10.0.0.0/24
		want: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
			setField(t, findObj(t, objs, "Service", "kube-dns"), "10.0.0.10", "spec", "clusterIP")
			return objs
		}},
	// Maps merge with values.yaml's (helm's rule): a key set to null leaves one out.
	{name: "nodeSelector", example: "workload", values: "nodeSelector: {node-role.example/dns: 'true'}",
		want: podSpec(false, map[string]string{"kubernetes.io/os": "linux", "node-role.example/dns": "true"}, "nodeSelector")},
	{name: "nodeSelector replaced", example: "workload", values: "nodeSelector: {kubernetes.io/os: null, node-role.example/dns: 'true'}",
		want: podSpec(false, map[string]string{"node-role.example/dns": "true"}, "nodeSelector")},
	{name: "tolerations", example: "workload", values: "tolerations: [{key: dedicated, operator: Equal, value: dns, effect: NoSchedule}]",
		want: podSpec(false, []map[string]string{{"key": "dedicated", "operator": "Equal", "value": "dns", "effect": "NoSchedule"}}, "tolerations")},
	{name: "affinity", example: "central", values: "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [dns]}]}]}}}",
		want: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
			return podSpec(false, map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "pool", "operator": "In", "values": []string{"dns"}}}}}}},
				"affinity", "nodeAffinity")(t, objs)
		}},
	{name: "priorityClassName", example: "workload", values: "priorityClassName: dns-critical",
		want: podSpec(false, "dns-critical", "priorityClassName")},
	{name: "podAnnotations", example: "workload", values: "podAnnotations: {cluster-autoscaler.kubernetes.io/safe-to-evict: 'false'}",
		want: podSpec(true, map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9153", "cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}, "annotations")},
	{name: "imagePullSecrets", example: "workload", values: "imagePullSecrets: [{name: regcred}]",
		want: podSpec(false, []map[string]string{{"name": "regcred"}}, "imagePullSecrets")},
	{name: "extraEnv", example: "workload", values: "extraEnv: [{name: GODEBUG, value: netdns=go}]",
		want: coreDNSContainer(func(c map[string]any) {
			c["env"] = append(c["env"].([]any), map[string]any{"name": "GODEBUG", "value": "netdns=go"})
		})},
	{name: "extraVolumes", example: "central", values: "extraVolumes: [{name: zones, configMap: {name: my-zones}}]\nextraVolumeMounts: [{name: zones, mountPath: /etc/coredns/zones, readOnly: true}]",
		want: then(coreDNSContainer(func(c map[string]any) {
			c["volumeMounts"] = append(c["volumeMounts"].([]any), map[string]any{"name": "zones", "mountPath": "/etc/coredns/zones", "readOnly": true})
		}), func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
			d := findObj(t, objs, "Deployment", "coredns")
			vols, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
			vols = append(vols, map[string]any{"name": "zones", "configMap": map[string]any{"name": "my-zones"}})
			_ = unstructured.SetNestedSlice(d.Object, vols, "spec", "template", "spec", "volumes")
			return objs
		})},
	{name: "etcd.endpoints", example: "workload", values: "etcd: {endpoints: [https://etcd-0.platform:2379, https://etcd-1.platform:2379, https://etcd-2.platform:2379]}",
		want: corefile(func(cf string) string {
			return strings.Replace(cf, "endpoint https://etcd.platform.example:2379",
				"endpoint https://etcd-0.platform:2379 https://etcd-1.platform:2379 https://etcd-2.platform:2379", 1)
		})},
	{name: "stubDomains", example: "workload", values: "stubDomains: {corp.example: [10.1.0.10, '10.1.0.11:5353']}",
		want: corefile(func(cf string) string {
			return cf + "corp.example:53 {\n    errors\n    cache 30\n    forward . 10.1.0.10 10.1.0.11:5353\n}\n"
		})},
	{name: "extraServerBlocks", example: "central", values: `extraServerBlocks:
  - zones: [{zone: example.org.}, {zone: example.net., scheme: "dns://"}]
    port: 1053
    plugins:
      - name: errors
      - name: file
        parameters: /etc/coredns/zones/example.org.db example.org.
      - name: cache
        parameters: 30
        configBlock: |
          success 1000
          denial 100
`,
		want: corefile(func(cf string) string {
			return cf + "example.org.:1053 dns://example.net.:1053 {\n    errors\n    file /etc/coredns/zones/example.org.db example.org.\n" +
				"    cache 30 {\n        success 1000\n        denial 100\n    }\n}\n"
		})},
	{name: "autoscaling.hpa", example: "workload", values: "autoscaling: {hpa: {enabled: true}}",
		want: withObjects(true, `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: coredns}
  minReplicas: 2
  maxReplicas: 10
  metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}
`)},
	{name: "autoscaling.proportional", example: "central", values: "autoscaling: {proportional: {enabled: true, nodesPerReplica: 8}}",
		want: withObjects(true, `apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns-autoscaler, namespace: kube-system, labels: {k8s-app: coredns-autoscaler}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "gatewaydns:coredns-autoscaler", labels: {k8s-app: coredns-autoscaler}}
rules:
  - {apiGroups: [""], resources: [nodes], verbs: [list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "gatewaydns:coredns-autoscaler", labels: {k8s-app: coredns-autoscaler}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "gatewaydns:coredns-autoscaler"}
subjects: [{kind: ServiceAccount, name: coredns-autoscaler, namespace: kube-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: coredns-autoscaler, namespace: kube-system, labels: {k8s-app: coredns-autoscaler}}
rules:
  - {apiGroups: [""], resources: [configmaps], verbs: [get, create]}
  - {apiGroups: [apps], resources: [deployments/scale], resourceNames: [coredns], verbs: [get, update]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: coredns-autoscaler, namespace: kube-system, labels: {k8s-app: coredns-autoscaler}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: coredns-autoscaler}
subjects: [{kind: ServiceAccount, name: coredns-autoscaler, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns-autoscaler, namespace: kube-system, labels: {k8s-app: coredns-autoscaler}}
data:
  linear: '{"coresPerReplica":256,"includeUnschedulableNodes":false,"max":0,"min":2,"nodesPerReplica":8,"preventSinglePointFailure":true}'
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns-autoscaler, namespace: kube-system, labels: {k8s-app: coredns-autoscaler}}
spec:
  selector: {matchLabels: {k8s-app: coredns-autoscaler}}
  template:
    metadata: {labels: {k8s-app: coredns-autoscaler}}
    spec:
      serviceAccountName: coredns-autoscaler
      priorityClassName: system-cluster-critical
      nodeSelector: {kubernetes.io/os: linux}
      tolerations:
        - {key: CriticalAddonsOnly, operator: Exists}
        - {key: node-role.kubernetes.io/control-plane, effect: NoSchedule}
      securityContext: {runAsNonRoot: true, runAsUser: 65534, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: autoscaler
          image: registry.k8s.io/cpa/cluster-proportional-autoscaler:v1.9.0
          imagePullPolicy: IfNotPresent
          command: [/cluster-proportional-autoscaler, --namespace=kube-system, --configmap=coredns-autoscaler,
            --target=Deployment/coredns, --logtostderr=true, --v=2]
          resources: {requests: {cpu: 20m, memory: 10Mi}, limits: {memory: 64Mi}}
          livenessProbe: {httpGet: {path: /healthz, port: 8080}, initialDelaySeconds: 10, periodSeconds: 5}
          securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`)},
	{name: "monitoring.podMonitor", example: "workload", values: "monitoring: {serviceMonitor: {enabled: false}, podMonitor: {enabled: true, labels: {release: kube-prometheus-stack}, interval: 30s}}",
		want: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
			objs = slices.DeleteFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "ServiceMonitor" })
			return withObjects(false, `apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata: {name: gatewaydns, namespace: kube-system, labels: {k8s-app: kube-dns, release: kube-prometheus-stack}}
spec:
  namespaceSelector: {matchNames: [kube-system]}
  selector: {matchLabels: {k8s-app: kube-dns}}
  podMetricsEndpoints: [{port: metrics, interval: 30s}]
`)(t, objs)
		}},
	{name: "monitoring.serviceMonitor", example: "workload", values: "monitoring: {serviceMonitor: {labels: {release: kube-prometheus-stack}, interval: 30s}}",
		want: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
			sm := findObj(t, objs, "ServiceMonitor", "gatewaydns")
			setField(t, sm, map[string]string{"k8s-app": "kube-dns", "release": "kube-prometheus-stack"}, "metadata", "labels")
			setField(t, sm, []map[string]string{{"port": "metrics", "interval": "30s"}}, "spec", "endpoints")
			return objs
		}},
}

// Each value beyond the overlays' does what it says and nothing else: the chart rendered with
// it is the example's render with exactly that change. The ServiceMonitor, the rules and the
// dashboard are the workload example's own (TestChartRendersTheOverlays).
func TestChartValuesDoWhatTheySay(t *testing.T) {
	dir := chartDir(t)
	for _, v := range chartValues {
		t.Run(v.name, func(t *testing.T) {
			values := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(values, []byte(v.values), 0o600); err != nil {
				t.Fatal(err)
			}
			helm(t, "lint", "--strict", dir, "-f", filepath.Join(dir, "examples", v.example+".yaml"), "-f", values)
			all := func(*unstructured.Unstructured) bool { return true }
			got := comparableDeploy(t, renderChart(t, v.example, v.values), all)
			want := comparableDeploy(t, v.want(t, renderChart(t, v.example)), all)
			for _, d := range kustomize.Diff(got, want) {
				t.Errorf("with %s: %s", v.values, d)
			}
		})
	}
}

// A value that cannot work is refused when the chart is rendered (helm install, upgrade and
// template alike), by values.schema.json or the templates, with a message that names it.
func TestChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		name, example, values string
		want                  []string // each in the error
	}{
		{"an empty zone", "central", `zone: ""`, []string{"at '/zone'", "'' does not match pattern"}},
		{"a zone with a space", "central", `zone: "openmcp cluster"`, []string{"at '/zone'", "'openmcp cluster' does not match pattern"}},
		{"a zone with an underscore", "central", `zone: "openmcp_cluster"`, []string{"at '/zone'", "'openmcp_cluster' does not match pattern"}},
		{"no etcd endpoint", "central", `etcd: {endpoints: []}`, []string{"at '/etcd/endpoints': minItems: got 0, want 1"}},
		{"endpoints comma-separated", "central", `etcd: {endpoints: "https://a:2379,https://b:2379"}`, []string{"at '/etcd/endpoints': got string, want array"}},
		{"an endpoint without a scheme", "central", `etcd: {endpoints: ["etcd:2379"]}`, []string{"at '/etcd/endpoints/0'", "'etcd:2379' does not match pattern"}},
		{"an endpoint of two members", "central", `etcd: {endpoints: ["https://a:2379 https://b:2379"]}`, []string{"at '/etcd/endpoints/0'", "does not match pattern"}},
		{"http:// with a client certificate", "central", `etcd: {endpoints: ["http://etcd:2379"], tlsSecret: gatewaydns-etcd}`, []string{"at '/etcd/endpoints/0'", "'http://etcd:2379' does not match pattern '^https://'"}},
		{"https:// without one", "central", `etcd: {endpoints: ["https://etcd:2379"], tlsSecret: ""}`, []string{"at '/etcd/endpoints/0'", "'https://etcd:2379' does not match pattern '^http://'"}},
		{"replicas in words", "central", `replicas: two`, []string{"at '/replicas': got string, want integer"}},
		{"no replica", "central", `replicas: 0`, []string{"at '/replicas': minimum: got 0, want 1"}},
		{"an unknown role", "central", `role: both`, []string{"at '/role': value must be one of 'workload', 'central'"}},
		{"a workload without owner or domain filter or central", "central", `role: workload`, []string{"missing properties 'owner', 'domainFilter', 'central'"}},
		{"an owner with a slash", "workload", `owner: prod/eu1`, []string{"at '/owner'", "'prod/eu1' does not match pattern"}},
		{"an owner with a space", "workload", `owner: "prod eu1"`, []string{"at '/owner'", "'prod eu1' does not match pattern"}},
		{"an empty owner", "workload", `owner: ""`, []string{"at '/owner'", "'' does not match pattern"}},
		{"a domain filter with a space", "workload", `domainFilter: "eu1 openmcp.cluster"`, []string{"at '/domainFilter'", "does not match pattern"}},
		{"central as two servers", "workload", `central: "10.0.0.53:53 10.0.0.54:53"`, []string{"at '/central'", "does not match pattern"}},
		{"an unknown source", "workload", `sources: [gateway-foo]`, []string{"at '/sources/0': value must be one of 'gateway-httproute'"}},
		{"a stub domain with a space", "workload", `stubDomains: {"corp example": [10.1.0.10]}`, []string{"invalid propertyName 'corp example'", "'corp example' does not match pattern"}},
		{"a stub domain without servers", "workload", `stubDomains: {corp.example: []}`, []string{"at '/stubDomains/corp.example': minItems: got 0, want 1"}},
		{"a kube-dns address not an IP", "workload", `service: {clusterIP: ten}`, []string{"at '/service/clusterIP'", "'ten' does not match pattern"}},
		{"both Prometheus Operator monitors", "workload", `monitoring: {podMonitor: {enabled: true}}`, []string{"monitoring.serviceMonitor and monitoring.podMonitor: enable one"}},
		{"both autoscalers", "workload", `autoscaling: {hpa: {enabled: true}, proportional: {enabled: true}}`, []string{"autoscaling.hpa and autoscaling.proportional: enable one"}},
		{"a server block without plugins", "central", `extraServerBlocks: [{zones: [{zone: example.org.}]}]`, []string{"at '/extraServerBlocks/0': missing property 'plugins'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helmRun(t, chartArgs(t, "kube-system", tc.example, tc.values)...)
			if err == nil {
				t.Fatalf("rendered with %s, want it refused", tc.values)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("with %s: %v\nwant the message to say %q", tc.values, err, w)
				}
			}
		})
	}
}

// helm template -n dns puts every namespaced object in dns, whatever is enabled: the only
// namespaced objects elsewhere are the namespaced RBAC's Roles and RoleBindings in the
// namespaces gatewaydns reads, whose subjects are in dns; so is every reference to the
// release's namespace (subjects, the monitors' selectors, the autoscaler's flags).
func TestChartHonoursTheReleaseNamespace(t *testing.T) {
	clusterScoped := map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true}
	for _, tc := range []struct{ example, values string }{
		{"workload", "autoscaling: {proportional: {enabled: true}}"},
		{"workload-namespaced", "autoscaling: {hpa: {enabled: true}}\nmonitoring: {podMonitor: {enabled: true}, prometheusRule: {enabled: true}, dashboard: {enabled: true}}"},
		{"central", ""},
	} {
		t.Run(tc.example, func(t *testing.T) {
			objs := renderChartIn(t, "dns", tc.example, tc.values)
			readers := []string{"team-a", "infra"} // the example's rbac.namespaces and gatewayNamespace
			for _, o := range objs {
				id := kustomize.ID(o)
				switch {
				case clusterScoped[o.GetKind()]:
					if o.GetNamespace() != "" {
						t.Errorf("%s: a cluster-scoped object with a namespace", id)
					}
				case (o.GetKind() == "Role" || o.GetKind() == "RoleBinding") && strings.HasPrefix(o.GetName(), "gatewaydns") && slices.Contains(readers, o.GetNamespace()):
				case o.GetNamespace() != "dns":
					t.Errorf("%s: in %q, want dns", id, o.GetNamespace())
				}
				subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
				for _, s := range subjects {
					if ns := s.(map[string]any)["namespace"]; ns != "dns" {
						t.Errorf("%s: subject %v in %v, want dns", id, s, ns)
					}
				}
				if names, ok, _ := unstructured.NestedStringSlice(o.Object, "spec", "namespaceSelector", "matchNames"); ok && !slices.Equal(names, []string{"dns"}) {
					t.Errorf("%s: selects namespaces %v, want [dns]", id, names)
				}
				if b, _ := json.Marshal(o.Object); strings.Contains(string(b), "kube-system") {
					t.Errorf("%s names kube-system: %s", id, b)
				}
			}
		})
	}
}
