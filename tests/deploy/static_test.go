package deploy

// What TestDeploy checks in the rendered objects before anything runs.

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gatewaydns/gatewaydns/internal/kustomize"
)

var envRef = regexp.MustCompile(`\{\$([A-Z0-9_]+)\}`)

func container(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	d := findObj(t, objs, "Deployment", "coredns")
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		if c.(map[string]any)["name"] == "coredns" {
			return c.(map[string]any)
		}
	}
	t.Fatal("no container coredns")
	return nil
}

func containerEnv(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	env := map[string]string{}
	list, _, _ := unstructured.NestedSlice(container(t, objs), "env")
	for _, e := range list {
		m := e.(map[string]any)
		env[m["name"].(string)] = fmt.Sprint(m["value"])
	}
	return env
}

// staticChecks: what the Deployment and the Corefile must agree on.
func staticChecks(t *testing.T, name string, objs []*unstructured.Unstructured, publishes bool) {
	t.Helper()
	cm := findObj(t, objs, "ConfigMap", "coredns")
	corefile, _, _ := unstructured.NestedString(cm.Object, "data", "Corefile")
	env := containerEnv(t, objs)
	for _, m := range envRef.FindAllStringSubmatch(corefile, -1) {
		if v, ok := env[m[1]]; !ok || v == "" {
			t.Errorf("%s: the Corefile reads {$%s}, which the Deployment does not set", name, m[1])
		}
	}
	if got := strings.Contains(corefile, "owner {$GATEWAYDNS_OWNER}"); got != publishes {
		t.Errorf("%s: publishes = %v, want %v", name, got, publishes)
	}
	d := findObj(t, objs, "Deployment", "coredns")
	spec := d.Object["spec"].(map[string]any)
	if spec["replicas"] != int64(2) && spec["replicas"] != float64(2) {
		t.Errorf("%s: replicas %v, want 2", name, spec["replicas"])
	}
	c := container(t, objs)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	if !reflect.DeepEqual(args, []string{"-conf", "/etc/coredns/Corefile"}) {
		t.Errorf("%s: args %v", name, args)
	}
	mounts := map[string]string{}
	vm, _, _ := unstructured.NestedSlice(c, "volumeMounts")
	for _, m := range vm {
		mounts[m.(map[string]any)["mountPath"].(string)] = m.(map[string]any)["name"].(string)
	}
	if mounts["/etc/coredns"] == "" || mounts["/etc/gatewaydns/etcd"] == "" {
		t.Errorf("%s: volume mounts %v lack /etc/coredns or /etc/gatewaydns/etcd", name, mounts)
	}
	if !strings.Contains(corefile, "tls /etc/gatewaydns/etcd/tls.crt /etc/gatewaydns/etcd/tls.key /etc/gatewaydns/etcd/ca.crt") {
		t.Errorf("%s: the Corefile does not use the mounted etcd certificates", name)
	}
	secret := findObj(t, objs, "Secret", "gatewaydns-etcd")
	for _, key := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if _, ok, _ := unstructured.NestedString(secret.Object, "data", key); !ok {
			t.Errorf("%s: Secret gatewaydns-etcd has no %s", name, key)
		}
	}
	// The probes and the metrics port are those the Corefile's plugins listen on by default.
	for _, want := range []string{"\n    health {", "\n    ready\n", "\n    prometheus :9153\n"} {
		if !strings.Contains(corefile, want) {
			t.Errorf("%s: the Corefile lacks %q (the probes use :8080/health, :8181/ready, metrics :9153)", name, want)
		}
	}
	ports := map[string]int64{}
	cp, _, _ := unstructured.NestedSlice(c, "ports")
	for _, p := range cp {
		m := p.(map[string]any)
		ports[m["name"].(string)] = toInt64(m["containerPort"])
	}
	if ports["liveness-probe"] != 8080 || ports["readiness-probe"] != 8181 || ports["metrics"] != 9153 || ports["dns"] != 53 || ports["dns-tcp"] != 53 {
		t.Errorf("%s: container ports %v", name, ports)
	}
	// A hashed ConfigMap name, mounted: a new Corefile is a new ConfigMap, old pods keep theirs.
	vols, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	mounted := ""
	for _, v := range vols {
		if cmv, ok := v.(map[string]any)["configMap"].(map[string]any); ok {
			mounted, _ = cmv["name"].(string)
		}
	}
	if mounted != cm.GetName() || mounted == "coredns" {
		t.Errorf("%s: the Deployment mounts ConfigMap %q, want the generated %q (coredns-<hash>)", name, mounted, cm.GetName())
	}
	// The image is set by the overlay's images:, never the base's placeholder or :latest.
	if img, _ := c["image"].(string); img == "gatewaydns-coredns" || strings.HasSuffix(img, ":latest") || !strings.Contains(img, "/") {
		t.Errorf("%s: image %q: set it through the overlay's images:", name, img)
	}
	// Memory sized for 100k routes or records (deploy/README.md "Memory": a writer publishing
	// 100k routes peaked at 368 MiB under this GOMEMLIMIT in make bench), GOMEMLIMIT below the
	// limit so the collector acts before the OOM killer.
	limit, _, _ := unstructured.NestedString(c, "resources", "limits", "memory")
	if limit != "448Mi" || env["GOMEMLIMIT"] != "320MiB" {
		t.Errorf("%s: memory limit %q, GOMEMLIMIT %q; want 448Mi and 320MiB", name, limit, env["GOMEMLIMIT"])
	}
	if !publishes {
		svc := findObj(t, objs, "Service", "gatewaydns")
		ranges, _, _ := unstructured.NestedStringSlice(svc.Object, "spec", "loadBalancerSourceRanges")
		if len(ranges) == 0 {
			t.Errorf("%s: Service gatewaydns has no loadBalancerSourceRanges: open to anyone", name)
		}
		// The source ranges filter the load balancer only: node ports would bypass them.
		if alloc, found, _ := unstructured.NestedBool(svc.Object, "spec", "allocateLoadBalancerNodePorts"); !found || alloc {
			t.Errorf("%s: Service gatewaydns allocates node ports, which loadBalancerSourceRanges does not filter", name)
		}
		sp, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
		for _, p := range sp {
			if tp := p.(map[string]any)["targetPort"]; tp != "dns-zone" && tp != "dns-zone-tcp" {
				t.Errorf("%s: Service gatewaydns sends to %v, want the zone-only port", name, tp)
			}
		}
	}
	if p, _, _ := unstructured.NestedString(c, "livenessProbe", "httpGet", "path"); p != "/health" {
		t.Errorf("%s: liveness path %q", name, p)
	}
	if p, _, _ := unstructured.NestedString(c, "readinessProbe", "httpGet", "path"); p != "/ready" {
		t.Errorf("%s: readiness path %q", name, p)
	}
}

func toInt64(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	case int:
		return int64(n)
	}
	return -1
}

// TestDeployImageOnlySetsTheImageAlone: deploy/overlays/image-only (docs/migration.md step 1:
// the new image, the Corefile unchanged) is a server-side apply configuration of one field,
// the container's image, and kubeadm-image applies that same configuration (plus the writer's
// RBAC, which the image swap itself does not need).
func TestDeployImageOnlySetsTheImageAlone(t *testing.T) {
	objs := renderOverlay(t, "image-only")
	if len(objs) != 1 {
		t.Fatalf("image-only renders %d objects, want the Deployment alone", len(objs))
	}
	img, _ := container(t, objs)["image"].(string)
	if img == "gatewaydns-coredns" || strings.HasSuffix(img, ":latest") || !strings.Contains(img, "/") {
		t.Errorf("image %q: set it through the overlay's images:", img)
	}
	want := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "coredns", "namespace": "kube-system"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "coredns", "image": img}},
		}}},
	}
	if !reflect.DeepEqual(objs[0].Object, want) {
		t.Errorf("image-only renders %v, want only the container's image set: %v", objs[0].Object, want)
	}
	for _, o := range renderOverlay(t, "kubeadm-image") {
		if o.GetKind() == "Deployment" && !reflect.DeepEqual(o.Object, objs[0].Object) {
			t.Errorf("kubeadm-image's Deployment %v differs from image-only's %v", o.Object, objs[0].Object)
		}
	}
}

// TestDeployPlainHTTPOverlaysAreTheTLSOnesWithoutTLS: overlays/workload-plain-http and
// central-plain-http (an etcd of http:// client URLs, as external-dns is often run) render the
// objects of overlays/workload and central, which TestDeploy runs, with nothing taken away but
// the TLS: no Secret gatewaydns-etcd, no etcd-certs volume or mount, no tls line in the
// Corefile, and the etcd endpoint http:// instead of https://. Any other difference is one
// overlay edited without the other.
func TestDeployPlainHTTPOverlaysAreTheTLSOnesWithoutTLS(t *testing.T) {
	for _, tls := range []string{"workload", "central"} {
		plainName := tls + "-plain-http"
		want := withoutTLS(t, tls, renderOverlay(t, tls))
		plain := renderOverlay(t, plainName)
		got := map[string]*unstructured.Unstructured{}
		for _, o := range plain {
			got[kustomize.ID(o)] = o
		}
		for id, w := range want {
			g, ok := got[id]
			switch {
			case !ok:
				t.Errorf("%s: no %s, which %s has", plainName, id, tls)
			case !reflect.DeepEqual(g.Object, w.Object):
				t.Errorf("%s: %s differs from %s's without TLS:\n got %v\nwant %v", plainName, id, tls, g.Object, w.Object)
			}
			delete(got, id)
		}
		for id := range got {
			t.Errorf("%s: %s, which %s does not have", plainName, id, tls)
		}
	}
}

// withoutTLS is what objs (an overlay that reaches etcd over TLS) become for plain HTTP, by
// kustomize.ID with the ConfigMap's hash left out.
func withoutTLS(t *testing.T, name string, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	tlsLine := regexp.MustCompile(`(?m)^\s*tls /etc/gatewaydns/etcd/tls\.crt /etc/gatewaydns/etcd/tls\.key /etc/gatewaydns/etcd/ca\.crt\n`)
	// The plain Corefile, and so the hashed name of its ConfigMap, first: the Deployment mounts it.
	c, _, _ := unstructured.NestedString(findObj(t, objs, "ConfigMap", "coredns").Object, "data", "Corefile")
	if !tlsLine.MatchString(c) {
		t.Errorf("%s: the Corefile has no tls line to drop:\n%s", name, c)
	}
	corefile := tlsLine.ReplaceAllString(c, "")
	hash, err := kustomize.NameHash(map[string]any{"Corefile": corefile})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		o = o.DeepCopy()
		switch o.GetKind() {
		case "Secret":
			if o.GetName() != "gatewaydns-etcd" {
				t.Errorf("%s: unexpected Secret %s", name, o.GetName())
			}
			continue
		case "ConfigMap":
			_ = unstructured.SetNestedField(o.Object, corefile, "data", "Corefile")
			o.SetName("coredns-" + hash)
		case "Deployment":
			spec := o.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			spec["volumes"] = slices.DeleteFunc(spec["volumes"].([]any), func(v any) bool {
				return v.(map[string]any)["name"] == "etcd-certs"
			})
			for _, v := range spec["volumes"].([]any) {
				if cm, ok := v.(map[string]any)["configMap"].(map[string]any); ok {
					cm["name"] = "coredns-" + hash
				}
			}
			c := spec["containers"].([]any)[0].(map[string]any)
			c["volumeMounts"] = slices.DeleteFunc(c["volumeMounts"].([]any), func(m any) bool {
				return m.(map[string]any)["mountPath"] == "/etc/gatewaydns/etcd"
			})
			for _, e := range c["env"].([]any) {
				e := e.(map[string]any)
				if e["name"] == "GATEWAYDNS_ETCD_ENDPOINTS" {
					e["value"] = strings.Replace(e["value"].(string), "https://", "http://", 1)
				}
			}
		}
		out[kustomize.ID(o)] = o
	}
	return out
}
