package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/freeport"
	"github.com/gatewaydns/gatewaydns/internal/secondary"
)

// The servers of phase A: Knot and NSD from Debian's packages, serving the dataset from a zone
// file as primaries, and CoreDNS with several plugins and Corefiles.

// authServer is one server phase A measures.
type authServer struct {
	name string
	DNS  string // 127.0.0.1:PORT
	p    *proc
	srv  *coreDNS // nil for Knot and NSD
}

// cpu is the CPU time the server's processes have used: the process, its threads and its
// children (NSD forks its server processes).
func (s *authServer) cpu() (time.Duration, error) {
	return cpuTimes(append([]int{s.p.pid()}, descendants(s.p.pid())...))
}

func (s *authServer) stop() { s.p.stop() }

// descendants are the processes below pid, from /proc/*/stat.
func descendants(pid int) []int {
	parents := map[int][]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 {
			continue
		}
		child, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		parent, _ := strconv.Atoi(fields[1])
		parents[parent] = append(parents[parent], child)
	}
	var out []int
	for todo := []int{pid}; len(todo) > 0; {
		p := todo[0]
		todo = todo[1:]
		out = append(out, parents[p]...)
		todo = append(todo, parents[p]...)
	}
	return out
}

// zoneFile is the dataset as a master file: what Knot and NSD serve, the records gatewaydns
// answers from etcd (an address is A or AAAA, a host name a CNAME, or with a port an SRV
// record), at the name of each key's parent, as external-dns's layout has it.
func zoneFile(d *dataset) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "$ORIGIN %s.\n$TTL 300\n", zone)
	fmt.Fprintf(&b, "@ IN SOA ns.dns.%s. hostmaster.%s. 1 7200 1800 86400 30\n", zone, zone)
	fmt.Fprintf(&b, "@ IN NS ns.dns.%s.\nns.dns IN A 127.0.0.1\n", zone)
	for _, r := range d.Records {
		name := msg.Domain(r.Key[:strings.LastIndexByte(r.Key, '/')])
		var v struct {
			Host string `json:"host"`
			Port int    `json:"port"`
			TTL  uint32 `json:"ttl"`
		}
		if err := json.Unmarshal([]byte(r.Value), &v); err != nil {
			return "", fmt.Errorf("%s: %w", r.Key, err)
		}
		switch _, ip := (&msg.Service{Host: v.Host}).HostType(); {
		case ip != nil && ip.To4() != nil:
			fmt.Fprintf(&b, "%s %d IN A %s\n", name, v.TTL, v.Host)
		case ip != nil:
			fmt.Fprintf(&b, "%s %d IN AAAA %s\n", name, v.TTL, v.Host)
		case v.Port > 0:
			fmt.Fprintf(&b, "%s %d IN SRV 10 100 %d %s\n", name, v.TTL, v.Port, dns.Fqdn(v.Host))
		default:
			fmt.Fprintf(&b, "%s %d IN CNAME %s\n", name, v.TTL, dns.Fqdn(v.Host))
		}
	}
	return b.String(), nil
}

// startPrimary runs Knot or NSD (kind) on the server's CPU, serving the zone file, and waits
// until it answers the zone's SOA.
func (h *harness) startPrimary(kind, zoneText string) (*authServer, error) {
	ports, err := freeport.Take(1)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(h.runDir, "primary-"+kind)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, zone+".zone"), []byte(zoneText), 0o644); err != nil {
		return nil, err
	}
	cmd, err := secondary.PrimaryCommand(kind, dir, strconv.Itoa(ports[0]))
	if err != nil {
		return nil, err
	}
	p, err := startProc(kind, filepath.Join(h.runDir, "primary-"+kind+".log"), h.serverCPU, nil, cmd.Path, cmd.Args[1:]...)
	if err != nil {
		return nil, err
	}
	s := &authServer{name: kind, DNS: fmt.Sprintf("127.0.0.1:%d", ports[0]), p: p}
	client := &dns.Client{Net: "udp", Timeout: 200 * time.Millisecond}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := soaSerial(client, s.DNS); err == nil {
			return s, nil
		}
		if !p.Running() || time.Now().After(deadline) {
			p.stop()
			return nil, p.failure(fmt.Errorf("%s does not answer the zone's SOA", kind))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// buildFloor builds the floor plugin's CoreDNS (bench/floor) into the cache directory.
func (h *harness) buildFloor() (string, error) {
	out := filepath.Join(h.root, ".cache", "bench", "coredns-floor")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./bench/floor")
	cmd.Dir = h.root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the floor plugin's coredns: %w\n%s", err, b)
	}
	return out, nil
}

// buildBaseline builds ./cmd/coredns of the commit rev (the code before a change, to measure
// the change against) from `git archive`, once: it is kept in the cache directory by commit.
func (h *harness) buildBaseline(rev string) (bin, commit string, err error) {
	out, err := exec.Command("git", "-C", h.root, "rev-parse", "--short", rev+"^{commit}").Output()
	if err != nil {
		return "", "", fmt.Errorf("baseline %s: %w", rev, err)
	}
	commit = strings.TrimSpace(string(out))
	bin = filepath.Join(h.root, ".cache", "bench", "coredns-"+commit)
	if _, err := os.Stat(bin); err == nil {
		return bin, commit, nil
	}
	src := filepath.Join(h.root, ".cache", "bench", "src-"+commit)
	if err := os.RemoveAll(src); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", "", err
	}
	archive := exec.Command("git", "-C", h.root, "archive", commit)
	untar := exec.Command("tar", "-x", "-C", src)
	if untar.Stdin, err = archive.StdoutPipe(); err != nil {
		return "", "", err
	}
	if err := untar.Start(); err != nil {
		return "", "", err
	}
	if err := archive.Run(); err != nil {
		return "", "", fmt.Errorf("git archive %s: %w", commit, err)
	}
	if err := untar.Wait(); err != nil {
		return "", "", fmt.Errorf("unpacking %s: %w", commit, err)
	}
	build := exec.Command("go", "build", "-trimpath", "-o", bin+".tmp", "./cmd/coredns")
	build.Dir = src
	if b, err := build.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building coredns of %s: %w\n%s", commit, err, b)
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		return "", "", err
	}
	_ = os.RemoveAll(src)
	return bin, commit, nil
}

// shippedBlock is the body of the zone's server block of a shipped Corefile (text) with what the
// bench runs in place of what needs the cluster: gatewaydns's stanza is replaced by stanza,
// health and prometheus listen on loopback ports (prometheus is added by serverSpec.metrics
// when the file has it), ready is the harness's own. metrics reports whether it had prometheus.
func shippedBlock(text, stanza string) (body string, metrics bool, err error) {
	var lines []string
	depth, inBlock, skip := 0, false, 0
	for _, raw := range strings.Split(text, "\n") {
		l := strings.TrimSpace(raw)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if !inBlock {
			// The zone's block: the first whose keys name it.
			if strings.HasSuffix(l, "{") && strings.Contains(l, zone) {
				inBlock, depth = true, 1
			}
			continue
		}
		opens, closes := strings.Count(l, "{"), strings.Count(l, "}")
		if depth == 1 && skip == 0 {
			word := strings.Fields(l)[0]
			switch word {
			case "gatewaydns":
				lines = append(lines, strings.Split(stanza, "\n")...)
				skip = depth
			case "ready", "health", "prometheus":
				metrics = metrics || word == "prometheus"
				skip = depth
			case "}":
			default:
				lines = append(lines, l)
			}
		} else if skip == 0 {
			lines = append(lines, l)
		}
		depth += opens - closes
		if skip != 0 && depth <= skip {
			skip = 0
		}
		if depth == 0 {
			break
		}
	}
	if !inBlock {
		return "", false, fmt.Errorf("no server block")
	}
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "gatewaydns") }) {
		return "", false, fmt.Errorf("no gatewaydns stanza in the server block")
	}
	return strings.Join(lines, "\n"), metrics, nil
}
