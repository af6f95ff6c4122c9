package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/freeport"
)

// externalDNSBuilder is the one script that builds external-dns v0.21.0 (make test-binaries runs
// it too); it keeps a binary it built before.
const externalDNSBuilder = "hack/build-external-dns.sh"

// externalDNS returns bin/external-dns, built by hack/build-external-dns.sh when it is not
// there yet (several minutes; make bench has run it already through make test-binaries). A
// failed build leaves .cache/bench/external-dns.failed, so later runs skip it rather than
// building again; delete that file to retry. why says why it is not there.
func (h *harness) externalDNS() (bin, why string) {
	bin = filepath.Join(h.binDir, "external-dns")
	cache := filepath.Join(h.root, ".cache", "bench")
	marker := filepath.Join(cache, "external-dns.failed")
	buildLog := filepath.Join(cache, "external-dns-build.log")
	if _, err := os.Stat(bin); err != nil {
		if data, err := os.ReadFile(marker); err == nil {
			return "", fmt.Sprintf("skipped: building external-dns failed before (%s; log %s; delete %s to retry)",
				strings.TrimSpace(string(data)), buildLog, marker)
		}
		logf("P: building external-dns into %s with %s (once; several minutes; log %s)", h.binDir, externalDNSBuilder, buildLog)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", "skipped: " + err.Error()
	}
	lf, err := os.Create(buildLog)
	if err != nil {
		return "", "skipped: " + err.Error()
	}
	defer lf.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	// Run every time: it returns at once when bin/external-dns is v0.21.0 already.
	cmd := exec.CommandContext(ctx, filepath.Join(h.root, externalDNSBuilder), h.binDir)
	cmd.Dir = h.root
	cmd.Stdout, cmd.Stderr = lf, lf
	start := time.Now()
	if err := cmd.Run(); err != nil {
		_ = os.WriteFile(marker, []byte(fmt.Sprintf("%s: %v\n", time.Now().Format(time.RFC3339), err)), 0o644)
		return "", fmt.Sprintf("skipped: %s failed: %v (log %s)", externalDNSBuilder, err, buildLog)
	}
	if d := time.Since(start); d > 5*time.Second {
		logf("P: external-dns built in %v", d.Round(time.Second))
	}
	return bin, ""
}

// externalDNSPropagation runs external-dns against the kube-apiserver, publishing into the
// same etcd, with a CoreDNS serving the zone with the stock etcd plugin, and measures Gateway
// status updates to answers.
func (h *harness) externalDNSPropagation(ctx context.Context, k *kubeEnv, bin, ns string) ([]float64, int, error) {
	name := "prop.x." + zone
	if err := catch(func() error {
		k.fx.Gateway(ns, "gw-x", gatewayv1.HTTPProtocolType, 80, "", "198.51.100.2")
		k.fx.HTTPRoute(ns, "prop-x", ns, "gw-x", name)
		return nil
	}); err != nil {
		return nil, 0, fmt.Errorf("kube-apiserver: creating the external-dns objects: %w", err)
	}
	stock, _, err := h.start(serverSpec{name: "etcd-serving",
		body: fmt.Sprintf("etcd {\n    endpoint %s\n}", h.etcd.ClientURL)}, 60*time.Second)
	if err != nil {
		return nil, 0, err
	}
	defer stock.stop()
	ports, err := freeport.Take(1)
	if err != nil {
		return nil, 0, err
	}
	xdns, err := startProc("external-dns", filepath.Join(h.runDir, "external-dns.log"), "",
		[]string{"ETCD_URLS=" + h.etcd.ClientURL}, bin,
		"--source=gateway-httproute", "--provider=coredns", "--events",
		"--kubeconfig="+k.kube.KubeconfigFile, "--domain-filter=x."+zone,
		"--txt-owner-id=bench-x", fmt.Sprintf("--metrics-address=127.0.0.1:%d", ports[0]))
	if err != nil {
		return nil, 0, err
	}
	defer xdns.stop()
	if _, err := waitAnswer(stock.DNS, name, "198.51.100.2", time.Now(), 50*time.Millisecond, 120*time.Second); err != nil {
		return nil, 0, xdns.failure(fmt.Errorf("the first name is not published: %w", err))
	}
	lat, failed, err := h.gatewayChanges(ctx, k, ns, "gw-x", stock.DNS, name, h.opt.xdnsChanges, 90*time.Second, 19)
	if err == nil && !xdns.Running() {
		err = xdns.failure(errExited)
	}
	return lat, failed, err
}
