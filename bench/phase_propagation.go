package main

import (
	"context"
	"fmt"
	"time"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// changeIP is the address of the i-th change of a path: distinct for consecutive changes.
func changeIP(base, i int) string {
	return fmt.Sprintf("198.%d.%d.%d", base, (i/250)%256, i%250+1)
}

// slowChange is the latency above which propagation logs a change, with how long the write
// itself took: a tail in the table is then told apart as etcd's or the answer's.
const slowChange = 100 * time.Millisecond

// propagation makes n changes one after the other; change(i) makes the i-th, whose answer is
// ip, and says when it was sent. It measures from then to the first answer of server for
// name that holds ip, asking every millisecond.
func propagation(n int, server, name string, timeout time.Duration, change func(i int, ip string) (time.Time, error), base int) ([]float64, int, error) {
	var lat []float64
	failed := 0
	for i := range n {
		ip := changeIP(base, i)
		sent, err := change(i, ip)
		if err != nil {
			return lat, failed, err
		}
		made := time.Since(sent) // the write itself: etcd's, or the API server's, share of the latency
		d, err := waitAnswer(server, name, ip, sent, time.Millisecond, timeout)
		if err != nil {
			failed++
			logf("P: change %d: %v", i, err)
			continue
		}
		if d > slowChange {
			logf("P: change %d answered after %v, of which the write took %v", i, d.Round(time.Microsecond), made.Round(time.Microsecond))
		}
		lat = append(lat, d.Seconds())
	}
	return lat, failed, nil
}

// phaseP: from an etcd write, and from a Gateway status update through the writer (and
// through external-dns), to the first DNS answer that reflects it.
func (h *harness) phaseP() error {
	p := &pResults{}
	h.res.p = p
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	count, _, err := countPrefix(ctx, h.cli, "/skydns/")
	if err != nil {
		return err
	}

	// 1. etcd write -> gatewaydns answer.
	serving, _, err := h.start(serverSpec{name: "gatewaydns-serving",
		body: fmt.Sprintf("gatewaydns {\n    endpoint %s\n}", h.etcd.ClientURL)}, 120*time.Second)
	if err != nil {
		return err
	}
	name := "prop.bench." + zone
	key := record.Key(record.DefaultPrefix, name, "bench", "prop")
	lat, failed, err := propagation(h.opt.changes, serving.DNS, name, 5*time.Second, func(_ int, ip string) (time.Time, error) {
		sent := time.Now()
		if _, err := h.cli.Put(ctx, key, fmt.Sprintf(`{"host":%q,"ttl":30}`, ip)); err != nil {
			return sent, fmt.Errorf("etcd: put %s: %w", key, err)
		}
		return sent, nil
	}, 18)
	if err != nil {
		return err
	}
	row := pRow{what: "etcd write -> gatewaydns answer", path: "etcd put; serving gatewaydns", records: count, n: len(lat), failed: failed, lat: summarize(lat)}
	p.rows = append(p.rows, row)
	logf("P: %s: p50 %.1f ms, p99 %.1f ms over %d (%d failed)", row.what, row.lat.p50*1000, row.lat.p99*1000, row.n, row.failed)

	// 2. Gateway status update -> writer -> etcd -> gatewaydns answer.
	k, err := h.kubeAPI()
	if err != nil {
		return err
	}
	const ns = "bench-p"
	if err := catch(func() error {
		k.fx.Namespace(ns)
		k.fx.Gateway(ns, "gw-w", gatewayv1.HTTPProtocolType, 80, "", "198.51.100.1")
		k.fx.HTTPRoute(ns, "prop-w", ns, "gw-w", "prop.w."+zone)
		return nil
	}); err != nil {
		return fmt.Errorf("kube-apiserver: creating the propagation objects: %w", err)
	}
	writer, _, err := h.start(serverSpec{name: "writer-p", metrics: true,
		body: fmt.Sprintf("gatewaydns {\n    endpoint %s\n    owner bench-p\n    kubeconfig %s\n    domain-filter w.%s\n    publish-only\n}",
			h.etcd.ClientURL, k.kube.KubeconfigFile, zone)}, 120*time.Second)
	if err != nil {
		return err
	}
	if _, err := waitAnswer(serving.DNS, "prop.w."+zone, "198.51.100.1", time.Now(), 10*time.Millisecond, 60*time.Second); err != nil {
		return writer.failure(fmt.Errorf("the first name is not published: %w", err))
	}
	lat, failed, err = h.gatewayChanges(ctx, k, ns, "gw-w", serving.DNS, "prop.w."+zone, h.opt.changes, 5*time.Second, 18)
	if err != nil {
		return err
	}
	row = pRow{what: "Gateway status update -> gatewaydns answer", path: "kube-apiserver; writer gatewaydns; etcd; serving gatewaydns",
		records: count, n: len(lat), failed: failed, lat: summarize(lat)}
	p.rows = append(p.rows, row)
	logf("P: %s: p50 %.1f ms, p99 %.1f ms over %d (%d failed)", row.what, row.lat.p50*1000, row.lat.p99*1000, row.n, row.failed)
	writer.stop()
	serving.stop()

	// 3. The same through external-dns and the stock etcd plugin.
	row = pRow{what: "Gateway status update -> external-dns + etcd plugin answer",
		path: "kube-apiserver; external-dns v0.21.0 --provider=coredns --events; etcd; stock etcd plugin", records: count}
	if !h.opt.externalDNS {
		row.skipped = "not measured (-external-dns=false)"
	} else if bin, why := h.externalDNS(); bin == "" {
		row.skipped = why
	} else {
		lat, failed, err := h.externalDNSPropagation(ctx, k, bin, ns)
		if err != nil {
			return err
		}
		row.n, row.failed, row.lat = len(lat), failed, summarize(lat)
		logf("P: %s: p50 %.1f ms, p99 %.1f ms over %d (%d failed)", row.what, row.lat.p50*1000, row.lat.p99*1000, row.n, row.failed)
	}
	if row.skipped != "" {
		logf("P: external-dns: %s", row.skipped)
	}
	p.rows = append(p.rows, row)
	return nil
}

// gatewayChanges changes the Gateway's status address n times and measures each.
func (h *harness) gatewayChanges(ctx context.Context, k *kubeEnv, ns, gwName, server, name string, n int, timeout time.Duration, base int) ([]float64, int, error) {
	g, err := k.gateway(ctx, ns, gwName)
	if err != nil {
		return nil, 0, err
	}
	return propagation(n, server, name, timeout, func(_ int, ip string) (time.Time, error) {
		var sent time.Time
		var err error
		g, sent, err = k.setGatewayAddress(ctx, g, ip)
		return sent, err
	}, base)
}
