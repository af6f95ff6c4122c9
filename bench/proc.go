package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/child"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// proc is a child process of the harness. Every proc still running is stopped by stopAll.
type proc struct {
	*child.Process
	started time.Time
}

var (
	procsMu sync.Mutex
	procs   []*proc
)

// startProc runs bin with args, and env added to the harness's environment; cpuList, when not
// empty, is the taskset CPU list the process is pinned to.
func startProc(name, logFile, cpuList string, env []string, bin string, args ...string) (*proc, error) {
	if cpuList != "" {
		args = append([]string{"-c", cpuList, bin}, args...)
		bin = "taskset"
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	started := time.Now()
	cp, err := child.Start(name, logFile, cmd)
	if err != nil {
		return nil, err
	}
	p := &proc{Process: cp, started: started}
	procsMu.Lock()
	procs = append(procs, p)
	procsMu.Unlock()
	return p, nil
}

func (p *proc) pid() int { return p.Cmd.Process.Pid }

// stop sends SIGTERM and waits for the exit, SIGKILL after 10s.
func (p *proc) stop() { p.Stop(syscall.SIGTERM, 10*time.Second) }

// failure names the process that failed, and its log with its last lines.
func (p *proc) failure(err error) error {
	return fmt.Errorf("%s failed: %w\n  its log: %s\n%s", p.Name, err, p.Log, indent(testenv.LogTail(p.Log, 15)))
}

// stopAll stops every process startProc started that still runs, last first.
func stopAll() {
	procsMu.Lock()
	ps := slices.Clone(procs)
	procsMu.Unlock()
	for i := len(ps) - 1; i >= 0; i-- {
		ps[i].stop()
	}
}

// rssBytes is the resident set size of pid, from /proc/PID/status.
func rssBytes(pid int) (int64, error) { return statusBytes(pid, "VmRSS") }

// peakRSSBytes is the largest resident set size pid has had.
func peakRSSBytes(pid int) (int64, error) { return statusBytes(pid, "VmHWM") }

// statusBytes reads a size field (in kB) of /proc/PID/status.
func statusBytes(pid int, field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading %s of %d: %w", field, pid, err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("%s of %d: %w", field, pid, err)
				}
				return kb * 1024, nil
			}
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// childrenNamed lists this process's children whose command name starts with comm (e.g. the
// etcd that internal/testenv started).
func childrenNamed(comm string) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", os.Getpid()))
	for _, t := range tasks {
		data, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(data)) {
			pid, err := strconv.Atoi(f)
			if err != nil || slices.Contains(out, pid) {
				continue
			}
			c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			if strings.HasPrefix(strings.TrimSpace(string(c)), comm) {
				out = append(out, pid)
			}
		}
	}
	return out
}

// pinPID pins every thread of a running process to cpuList.
func pinPID(pid int, cpuList string) error {
	out, err := exec.Command("taskset", "-a", "-p", "-c", cpuList, strconv.Itoa(pid)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("taskset -a -p -c %s %d: %w: %s", cpuList, pid, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// indent sets every line of s off by four spaces.
func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

var errExited = errors.New("exited")

// cpuTime is the CPU time (user and system) pid has used so far, from /proc/PID/stat. Its
// threads that have exited count too; its children do not.
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of %d: %w", pid, err)
	}
	// The command name, field 2, is in parentheses and may hold spaces: count after it.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	var ticks int64
	for _, v := range f[11:13] { // utime and stime, fields 14 and 15
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	// USER_HZ, the unit of these fields, is 100 on every Linux architecture Go supports.
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// cpuTimes is the CPU time of each of pids, summed.
func cpuTimes(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		t, err := cpuTime(pid)
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return sum, nil
}
