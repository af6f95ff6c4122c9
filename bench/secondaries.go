package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/secondary"
)

// Phase X's secondaries: Knot and NSD from Debian's packages, configured as the tests configure
// them (internal/secondary), each on a loopback port as a secondary of the server measured,
// which NOTIFYs them of each change (its `notify` option). They run on the client's CPU at the
// AXFR client's nice value: a secondary runs on another machine, and its work must not count as
// the primary's latency more than it has to.

// secondaryProc is one running secondary.
type secondaryProc struct {
	*proc
	kind string
	DNS  string // 127.0.0.1:PORT
}

// startSecondary runs a secondary of kind on port, transferring from primary.
func (h *harness) startSecondary(kind string, port int, primary string) (*secondaryProc, error) {
	dir := filepath.Join(h.runDir, "secondary-"+kind)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	_, pport, _ := strings.Cut(primary, ":")
	cmd, err := secondary.Command(secondary.Config{Kind: kind, Dir: dir, Port: strconv.Itoa(port), PrimaryPort: pport})
	if err != nil {
		return nil, err
	}
	args := append([]string{"-n", strconv.Itoa(h.opt.axfrNice), cmd.Path}, cmd.Args[1:]...)
	p, err := startProc(kind, filepath.Join(h.runDir, "secondary-"+kind+".log"), h.clientCPU, nil, "nice", args...)
	if err != nil {
		return nil, err
	}
	return &secondaryProc{proc: p, kind: kind, DNS: fmt.Sprintf("127.0.0.1:%d", port)}, nil
}

// startSecondaries runs one secondary of each kind on ports, of srv, and waits until each has
// the zone.
func (h *harness) startSecondaries(srv *coreDNS, ports []int) ([]*secondaryProc, error) {
	var secs []*secondaryProc
	for i, kind := range secondary.Kinds {
		s, err := h.startSecondary(kind, ports[i], srv.DNS)
		if err != nil {
			return secs, err
		}
		secs = append(secs, s)
	}
	start := time.Now()
	serial, err := waitSynced(srv.DNS, secs, 2*time.Minute)
	if err != nil {
		return secs, err
	}
	logf("X: %s have the zone at serial %d after %v", strings.Join(secondary.Kinds, " and "), serial, time.Since(start).Round(time.Millisecond))
	return secs, nil
}

// notifyLines is the gatewaydns option that NOTIFYs the secondaries on ports.
func notifyLines(ports []int) string {
	var addrs []string
	for _, p := range ports {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", p))
	}
	return "\n    notify " + strings.Join(addrs, " ")
}
