package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// machineInfo describes the machine and the versions, for the report.
func machineInfo(h *harness) []string {
	cpu := "unknown"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	load := "unknown"
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(data))[:3], " ")
	}
	out := []string{
		fmt.Sprintf("CPUs: %d (%s), %s/%s", runtime.NumCPU(), cpu, runtime.GOOS, runtime.GOARCH),
		"load average at start: " + load,
		"coredns: " + firstLine(cmdOutput(h.coredns, "-version")),
		"etcd: " + firstLine(cmdOutput(filepath.Join(h.binDir, "etcd"), "--version")),
		"dnsperf: " + dnsperfVersion(),
		"harness: " + runtime.Version(),
	}
	return out
}

func cmdOutput(bin string, args ...string) string {
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(%s: %v)", filepath.Base(bin), err)
	}
	return strings.TrimSpace(string(out))
}

func dnsperfVersion() string {
	out, _ := exec.Command("dnsperf", "-h").CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "Version") {
			return strings.TrimSpace(strings.TrimPrefix(l, "Version"))
		}
	}
	return "unknown"
}
