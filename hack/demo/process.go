// Process control: `up` starts the background process and follows its progress, `down` stops
// every process the demo recorded, by PID.

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

func (d *demo) up() int {
	if d.running() {
		fmt.Println("A demo is already running: stopping it first (make demo-down).")
		if !d.down(true) {
			return 1
		}
	}
	for _, b := range []string{filepath.Join(d.root, "coredns"), filepath.Join(d.root, "bin", "etcd"), filepath.Join(d.root, "bin", "kube-apiserver")} {
		if fi, err := os.Stat(b); err != nil || fi.Mode()&0o111 == 0 {
			fmt.Fprintf(os.Stderr, "demo: %s is missing: run `make demo`, which builds it (make build demo-binaries)\n", d.rel(b))
			return 1
		}
	}
	if err := checkPorts(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	if err := os.RemoveAll(d.dir); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}

	// The background process is a copy of this program, so that it outlives a `go run`'s
	// temporary build and shows up under a clear name in ps.
	self, err := os.Executable()
	if err == nil {
		err = copyFile(self, d.path(driverName), 0o755)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: copying the driver: %v\n", err)
		return 1
	}
	logf, err := os.Create(d.path("demo.log"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	cmd := exec.Command(d.path(driverName), "serve")
	cmd.Dir = d.root
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // not in the terminal's process group
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: starting the background process: %v\n", err)
		return 1
	}
	logf.Close()
	if err := appendPID(d.path("pids"), cmd.Process.Pid, "demo", d.path("demo.log")); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()

	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt, syscall.SIGTERM)

	fmt.Printf("Starting a gatewaydns landscape on loopback (zone %s). Logs: %s/*.log\n", zone, d.rel(d.dir))
	status, ok := d.follow(exited, interrupted)
	if !ok {
		fmt.Fprintln(os.Stderr)
		if status != "" {
			fmt.Fprintln(os.Stderr, status)
		}
		fmt.Fprintln(os.Stderr, "Stopping what was started ...")
		d.down(false)
		return 1
	}
	var info landscapeInfo
	if data, err := os.ReadFile(d.path("landscape.json")); err != nil || json.Unmarshal(data, &info) != nil {
		fmt.Fprintf(os.Stderr, "demo: cannot read %s: %v\n", d.path("landscape.json"), err)
		return 1
	}
	if err := d.printAnswers(&info); err != nil {
		fmt.Fprintf(os.Stderr, "\ndemo: the landscape does not answer as it should:\n%s\nLogs: %s/*.log. Stopping what was started ...\n",
			indent(err.Error()), d.rel(d.dir))
		d.down(false)
		return 1
	}
	return 0
}

// follow prints the progress lines of the background process until it is ready (ok) or failed.
func (d *demo) follow(exited <-chan struct{}, interrupted <-chan os.Signal) (status string, ok bool) {
	var offset int64
	deadline := time.Now().Add(startupWait)
	for {
		lines, n := readNewLines(d.path("progress.log"), offset)
		offset = n
		for _, l := range lines {
			switch {
			case l == "READY":
				return "", true
			case strings.HasPrefix(l, "FAILED"):
				rest, _ := readNewLines(d.path("progress.log"), offset)
				return strings.Join(append([]string{strings.TrimPrefix(l, "FAILED ")}, rest...), "\n"), false
			default:
				fmt.Println(l)
			}
		}
		select {
		case <-exited:
			if lines, _ := readNewLines(d.path("progress.log"), offset); len(lines) > 0 {
				continue
			}
			return fmt.Sprintf("The background process exited unexpectedly; its log: %s\n%s", d.rel(d.path("demo.log")), testenv.LogTail(d.path("demo.log"), 20)), false
		case <-interrupted:
			return "Interrupted.", false
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("Not ready after %s; logs in %s", startupWait, d.rel(d.dir)), false
		}
	}
}

func readNewLines(path string, offset int64) ([]string, int64) {
	f, err := os.Open(path)
	if err != nil {
		return nil, offset
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset
	}
	data, _ := io.ReadAll(f)
	end := strings.LastIndexByte(string(data), '\n')
	if end < 0 {
		return nil, offset
	}
	return strings.Split(string(data[:end]), "\n"), offset + int64(end) + 1
}

// checkPorts fails when a fixed port of the demo is taken.
func checkPorts() error {
	check := func(port int, what string, udp bool) error {
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		l, err := net.Listen("tcp", addr)
		if err == nil {
			l.Close()
			if udp {
				var u net.PacketConn
				if u, err = net.ListenPacket("udp", addr); err == nil {
					u.Close()
				}
			}
		}
		if err != nil {
			return fmt.Errorf("%s needs %s, which is in use (%v). Is another demo or `make run` running? "+
				"`make demo-down` stops a demo; `ss -lntup | grep :%d` shows who holds it", what, addr, err, port)
		}
		return nil
	}
	if err := check(etcdPort, "the central etcd", false); err != nil {
		return err
	}
	if err := check(centralPort, "the central CoreDNS", true); err != nil {
		return err
	}
	for _, c := range clusters {
		if err := check(c.Port, "the CoreDNS of cluster "+c.Name, true); err != nil {
			return err
		}
	}
	return nil
}

// pidEntry is a line of the pids file: a process the demo started.
type pidEntry struct {
	PID   int
	Start string // the process's start time (field 22 of /proc/PID/stat): guards against PID reuse
	Name  string
	Log   string
}

func appendPID(file string, pid int, name, logFile string) error {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintf(f, "%d %s %s %s\n", pid, procStart(pid), name, logFile)
	return err
}

func readPIDs(file string) []pidEntry {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []pidEntry
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		e := pidEntry{PID: pid, Start: f[1], Name: f[2]}
		if len(f) > 3 {
			e.Log = f[3]
		}
		out = append(out, e)
	}
	return out
}

// procStart is the start time of a process in clock ticks since boot, "" when it does not run.
func procStart(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" { // a zombie has exited
		return ""
	}
	return f[19]
}

// alive reports whether the process of e still runs (the same process, not a reused PID).
func (e pidEntry) alive() bool { s := procStart(e.PID); return s != "" && s == e.Start }

func (d *demo) running() bool {
	for _, e := range readPIDs(d.path("pids")) {
		if e.alive() {
			return true
		}
	}
	return false
}

// down stops the demo: SIGTERM to the background process, which stops what it started; then
// SIGTERM and, after a grace period, SIGKILL to every recorded process still running.
func (d *demo) down(verbose bool) bool {
	entries := readPIDs(d.path("pids"))
	var live []pidEntry
	for _, e := range entries {
		if e.alive() {
			live = append(live, e)
		}
	}
	if len(live) == 0 {
		if verbose {
			fmt.Println("No demo is running.")
		}
		_ = os.Remove(d.path("pids"))
		return true
	}
	waitGone := func(es []pidEntry, timeout time.Duration) []pidEntry {
		deadline := time.Now().Add(timeout)
		for {
			var still []pidEntry
			for _, e := range es {
				if e.alive() {
					still = append(still, e)
				}
			}
			if len(still) == 0 || time.Now().After(deadline) {
				return still
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// The background process first: it stops the components in order.
	if live[0].Name == "demo" {
		_ = syscall.Kill(live[0].PID, syscall.SIGTERM)
		waitGone(live[:1], 60*time.Second)
	}
	still := waitGone(live, 0)
	for _, e := range still {
		_ = syscall.Kill(e.PID, syscall.SIGTERM)
	}
	still = waitGone(still, 15*time.Second)
	for _, e := range still {
		fmt.Fprintf(os.Stderr, "demo: %s (pid %d) ignored SIGTERM: killing it\n", e.Name, e.PID)
		_ = syscall.Kill(e.PID, syscall.SIGKILL)
	}
	still = waitGone(still, 5*time.Second)
	if verbose {
		for _, e := range live {
			if !slices.Contains(still, e) {
				fmt.Printf("stopped %-24s pid %d\n", e.Name, e.PID)
			}
		}
	}
	if len(still) > 0 {
		for _, e := range still {
			fmt.Fprintf(os.Stderr, "demo: %s (pid %d) is still running\n", e.Name, e.PID)
		}
		return false
	}
	_ = os.Remove(d.path("pids"))
	for _, p := range []string{"etcd-data", "pki", "landscape.json", driverName} {
		_ = os.RemoveAll(d.path(p))
	}
	for _, c := range clusters {
		_ = os.Remove(d.path(c.Name + ".kubeconfig"))
	}
	if verbose {
		fmt.Printf("The demo is stopped; its logs and Corefiles stay in %s\n", d.rel(d.dir))
	}
	return true
}
