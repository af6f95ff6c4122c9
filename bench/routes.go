package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// routeSet is the HTTPRoutes of phases W and B: -routes of them in one namespace, attached to
// a few Gateways, each with one hostname under routeDomain.
type routeSet struct {
	namespace string
	gateways  []string
	n         int
	created   time.Duration // creating them, once per run
}

// routeDomain is where the routes' hostnames are: the writers' domain filter.
const routeDomain = "wt." + zone

// gatewayAddress is the address of Gateway i of a routeSet.
func gatewayAddress(i int) string { return fmt.Sprintf("203.0.113.%d", i+1) }

// address is the address route i's name gets: its Gateway's (createRoutes attaches route i to
// Gateway i modulo their count).
func (rs *routeSet) address(i int) string { return gatewayAddress(i % len(rs.gateways)) }

// routeHostname is the hostname of route i.
func routeHostname(i int) string { return fmt.Sprintf("r%d.%s", i, routeDomain) }

// clusterRoutes starts the kube-apiserver, and creates the Gateways and the routes in it on
// first use, then waits until it is quiet again; later phases find them there (the writers
// list every namespace, so a second set would double what each of them holds).
func (h *harness) clusterRoutes(ctx context.Context) (*kubeEnv, *routeSet, error) {
	k, err := h.kubeAPI()
	if err != nil || h.routes != nil {
		return k, h.routes, err
	}
	rs := &routeSet{namespace: "bench-w", gateways: []string{"gw-0", "gw-1", "gw-2", "gw-3"}, n: h.opt.routes}
	if err := catch(func() error {
		k.fx.Namespace(rs.namespace)
		for i, g := range rs.gateways {
			k.fx.Gateway(rs.namespace, g, gatewayv1.HTTPProtocolType, 80, "", gatewayAddress(i))
		}
		return nil
	}); err != nil {
		return k, nil, fmt.Errorf("kube-apiserver: creating the Gateways: %w", err)
	}
	start := time.Now()
	if err := k.createRoutes(ctx, rs.namespace, rs.namespace, rs.gateways, rs.n, routeHostname); err != nil {
		return k, nil, err
	}
	rs.created = time.Since(start)
	logf("%d HTTPRoutes created and accepted in %v", rs.n, rs.created.Round(time.Millisecond))
	if err := waitQuiet(ctx, k); err != nil {
		return k, nil, err
	}
	h.routes = rs
	return k, rs, nil
}

// createRoutes makes n HTTPRoutes route-<i> in namespace for hostname(i), attached to Gateway
// gateways[i%len] (in gwNamespace) and Accepted in their status as a controller sets it.
//
// Through the API, a route is two requests (create, then its status), and the kube-apiserver
// validates each against the CRD's schema and rules: about 250 routes a second on two cores,
// seven minutes for 100k, for a setup that is not what is measured. So the first route of each
// Gateway goes through the API, and the others are copies of the first as the API server stored
// it (name, uid, hostname and parent changed), written straight into the API server's etcd in
// transactions. Before it returns, the API server serves the last of them from its watch cache:
// a writer that starts then lists all n.
func (k *kubeEnv) createRoutes(ctx context.Context, namespace, gwNamespace string, gateways []string, n int, hostname func(int) string) error {
	first := min(n, len(gateways))
	for i := range first {
		if err := k.createRoute(ctx, namespace, routeName(i), gwNamespace, gateways[i], hostname(i)); err != nil {
			return err
		}
	}
	if n == first {
		return nil
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{k.kube.Env.ControlPlane.Etcd.URL.String()}, DialTimeout: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("the kube-apiserver's etcd: %w", err)
	}
	defer cli.Close()
	const resource = "/registry/gateway.networking.k8s.io/httproutes/"
	templates := make([]map[string]any, first)
	for i := range first {
		key := resource + namespace + "/" + routeName(i)
		resp, err := cli.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("the kube-apiserver's etcd: reading %s: %w", key, err)
		}
		if len(resp.Kvs) != 1 {
			return fmt.Errorf("the kube-apiserver's etcd: %s not found: is the storage layout /registry/<group>/<resource>/<namespace>/<name>?", key)
		}
		if err := json.Unmarshal(resp.Kvs[0].Value, &templates[i]); err != nil {
			return fmt.Errorf("the kube-apiserver's etcd: %s is not JSON (%w): custom resources are stored as JSON", key, err)
		}
	}
	recs := make([]kv, 0, n-first)
	for i := first; i < n; i++ {
		value, err := routeCopy(templates[i%first], routeName(i), hostname(i))
		if err != nil {
			return err
		}
		recs = append(recs, kv{Key: resource + namespace + "/" + routeName(i), Value: string(value)})
	}
	start := time.Now()
	if err := loadRecords(ctx, cli, recs, 8); err != nil {
		return fmt.Errorf("the kube-apiserver's etcd: %w", err)
	}
	_, rev, err := countPrefix(ctx, cli, resource)
	if err != nil {
		return fmt.Errorf("the kube-apiserver's etcd: %w", err)
	}
	written := time.Since(start)
	if err := k.waitCached(ctx, namespace, routeName(n-1), rev); err != nil {
		return err
	}
	logf("%d copies of the first %d routes written into the kube-apiserver's etcd in %v, in its watch cache %v later",
		len(recs), first, written.Round(time.Millisecond), (time.Since(start) - written).Round(time.Millisecond))
	return nil
}

func routeName(i int) string { return fmt.Sprintf("route-%d", i) }

// routeCopy is the stored route template with another name, uid and hostname; its parent, and
// the status that accepts it, stay the template's.
func routeCopy(template map[string]any, name, hostname string) ([]byte, error) {
	meta, ok1 := template["metadata"].(map[string]any)
	spec, ok2 := template["spec"].(map[string]any)
	if !ok1 || !ok2 {
		return nil, errors.New("the stored HTTPRoute has no metadata or spec")
	}
	m, sp := map[string]any{}, map[string]any{}
	for k, v := range meta {
		m[k] = v
	}
	for k, v := range spec {
		sp[k] = v
	}
	m["name"], m["uid"] = name, string(uuid.NewUUID())
	sp["hostnames"] = []string{hostname}
	out := map[string]any{}
	for k, v := range template {
		out[k] = v
	}
	out["metadata"], out["spec"] = m, sp
	return json.Marshal(out)
}

// waitCached waits until the kube-apiserver serves name at etcd revision rev or later: its
// watch cache then holds every object written before.
func (k *kubeEnv) waitCached(ctx context.Context, namespace, name string, rev int64) error {
	routes := k.gw.GatewayV1().HTTPRoutes(namespace)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		// A GET at a resourceVersion is served by the watch cache once it has reached it; the
		// API server answers "Too large resource version" after waiting 3 s for it. It has also
		// answered NotFound for the object just written (one run in many, kube-apiserver
		// v1.36.3): the object is there, so that too means not yet.
		_, err := routes.Get(ctx, name, metav1.GetOptions{ResourceVersion: fmt.Sprint(rev)})
		if err == nil {
			return nil
		}
		if !apierrors.IsTimeout(err) && !apierrors.IsNotFound(err) && !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
			return fmt.Errorf("kube-apiserver: reading HTTPRoute %s/%s at revision %d: %w", namespace, name, rev, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver: its watch cache did not reach revision %d in 5m: %w", rev, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
