package publish

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// TestWriterPublishesSteering (issue 36, the publish side): a writer binary against a real
// kube-apiserver and etcd writes each cluster's steering policy into the SkyDNS values of its
// names, byte for byte as shared/spec/steering.md's carrier says: a route annotated with a
// weight, a priority and a health check carries a "steering" object; a route without
// annotations writes exactly the value it wrote before steering existed; a Gateway's
// annotations are the default of the routes through it, and changing them rewrites those
// routes' values; an invalid annotation is a Warning Event on the route, and the name is still
// published, without the policy; a DNSEndpoint written for external-dns's Route 53 weighted
// records (setIdentifier, aws/weight) carries the weight.
func TestWriterPublishesSteering(t *testing.T) {
	start := time.Now()
	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	kube := testenv.StartKubeAPIServer(t)
	kube.InstallDNSEndpointCRD(t)
	k8s := gatewayfixture.New(t, kube.Config)
	k8s.Namespace("infra")
	k8s.Namespace("shop")
	k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "*.eu1.openmcp.cluster", "203.0.113.10")
	k8s.Gateway("infra", "standby", gatewayv1.HTTPProtocolType, 80, "*.eu1.openmcp.cluster", "203.0.113.20")
	k8s.AnnotateGateway("infra", "standby", source.PriorityAnnotation, "1")

	k8s.HTTPRoute("shop", "plain", "infra", "public", "plain.eu1.openmcp.cluster")
	k8s.HTTPRoute("shop", "canary", "infra", "public", "canary.eu1.openmcp.cluster")
	k8s.AnnotateHTTPRoute("shop", "canary", source.WeightAnnotation, "90", source.PriorityAnnotation, "0", source.HealthCheckAnnotation, "tcp://:443")
	k8s.HTTPRoute("shop", "typo", "infra", "public", "typo.eu1.openmcp.cluster")
	k8s.AnnotateHTTPRoute("shop", "typo", source.WeightAnnotation, "ninety")
	k8s.HTTPRoute("shop", "backup", "infra", "standby", "backup.eu1.openmcp.cluster")
	_, err := k8s.Dyn.Resource(source.DNSEndpointGVR).Namespace("shop").Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": source.KindDNSEndpoint,
		"metadata": map[string]any{"name": "migrated"},
		"spec": map[string]any{"endpoints": []any{map[string]any{
			"dnsName": "r53.eu1.openmcp.cluster", "recordType": "A", "targets": []any{"203.0.113.30"},
			"setIdentifier": "eu1", "providerSpecific": []any{map[string]any{"name": "aws/weight", "value": "20"}},
		}}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	e2e.RunWriter(t, "eu1", etcd.ClientURL, "eu1", kube.KubeconfigFile, "eu1.openmcp.cluster", "sources gateway-httproute crd").WaitReady(t, 60*time.Second)
	t.Logf("etcd, kube-apiserver and the writer up after %s", time.Since(start))

	// The value of each name, as every writer before steering wrote it (a ttl of 0, the
	// plugin default, is left out), and what steering adds.
	value := func(host, source, steering string) func(ttl int) string {
		return func(ttl int) string {
			v := fmt.Sprintf(`{"host":%q,"targetstrip":1,"owner":"eu1","sources":[%q]`, host, source)
			if ttl > 0 {
				v = fmt.Sprintf(`{"host":%q,"ttl":%d,"targetstrip":1,"owner":"eu1","sources":[%q]`, host, ttl, source)
			}
			if steering != "" {
				v += `,"steering":` + steering
			}
			return v + "}"
		}
	}
	for _, tc := range []struct {
		behaviour, name, host string
		want                  func(ttl int) string
	}{
		{"a route without annotations writes the bytes of before", "plain.eu1.openmcp.cluster", "203.0.113.10",
			value("203.0.113.10", "HTTPRoute/shop/plain", "")},
		{"an annotated route writes its policy", "canary.eu1.openmcp.cluster", "203.0.113.10",
			value("203.0.113.10", "HTTPRoute/shop/canary", `{"weight":90,"healthCheck":"tcp://:443"}`)},
		{"an invalid annotation: published without the policy", "typo.eu1.openmcp.cluster", "203.0.113.10",
			value("203.0.113.10", "HTTPRoute/shop/typo", "")},
		{"a route through an annotated Gateway takes its priority", "backup.eu1.openmcp.cluster", "203.0.113.20",
			value("203.0.113.20", "HTTPRoute/shop/backup", `{"priority":1}`)},
		{"a Route 53 weighted DNSEndpoint keeps its weight", "r53.eu1.openmcp.cluster", "203.0.113.30",
			value("203.0.113.30", "DNSEndpoint/shop/migrated", `{"weight":20}`)},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			got := waitValue(t, cli, tc.name, "eu1", tc.host, 15*time.Second, func(v string) bool { return v == tc.want(ttlOf(v)) })
			t.Logf("%s: %s", tc.name, got)
		})
	}

	msg := e2e.WaitEvent(t, k8s, "shop", "HTTPRoute", "typo", string(source.CauseInvalidAnnotation), 10*time.Second)
	if !strings.Contains(msg, source.WeightAnnotation) || !strings.Contains(msg, `"ninety"`) || !strings.Contains(msg, "without this steering policy") {
		t.Errorf("the Event does not say what is wrong and what was done: %q", msg)
	}

	// The Gateway's annotation changes: the routes through it are written again, in place.
	k8s.AnnotateGateway("infra", "standby", source.PriorityAnnotation, "2")
	waitValue(t, cli, "backup.eu1.openmcp.cluster", "eu1", "203.0.113.20", 10*time.Second,
		func(v string) bool { return strings.HasSuffix(v, `,"steering":{"priority":2}}`) })
	// And the annotation fixed: the policy comes.
	k8s.AnnotateHTTPRoute("shop", "typo", source.WeightAnnotation, "90")
	waitValue(t, cli, "typo.eu1.openmcp.cluster", "eu1", "203.0.113.10", 10*time.Second,
		func(v string) bool { return strings.HasSuffix(v, `,"steering":{"weight":90}}`) })
	t.Logf("total %s", time.Since(start))
}

// waitValue waits until the owner's key of name for host holds a value cond accepts, and
// returns it.
func waitValue(t *testing.T, cli *clientv3.Client, name, owner, host string, within time.Duration, cond func(string) bool) string {
	t.Helper()
	key := record.Key(record.DefaultPrefix, name, owner, host)
	var last string
	for deadline := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
		if kv, ok := e2e.KeysUnder(t, cli, key)[key]; ok {
			last = kv.Value
			if cond(last) {
				return last
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the value is %q after %s", key, last, within)
		}
	}
}

// ttlOf is the ttl of a value.
func ttlOf(v string) int {
	val, err := record.ParseValue([]byte(v))
	if err != nil {
		return -1
	}
	return int(val.TTL)
}
