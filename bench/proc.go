package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a child process with its output in a log file. It gets SIGKILL when the harness
// dies (Pdeathsig, from a goroutine locked to its thread for the child's whole life), and
// every proc still running is stopped by stopAll.
type proc struct {
	name    string
	log     string
	cmd     *exec.Cmd
	started time.Time
	exited  chan struct{}
	err     error // cmd.Wait's result, once exited is closed
}

var (
	procsMu sync.Mutex
	procs   []*proc
)

// cpuList, when not empty, is the taskset CPU list a process is pinned to.
func startProc(name, logFile, cpuList string, env []string, bin string, args ...string) (*proc, error) {
	lf, err := os.Create(logFile)
	if err != nil {
		return nil, fmt.Errorf("%s: creating its log: %w", name, err)
	}
	if cpuList != "" {
		args = append([]string{"-c", cpuList, bin}, args...)
		bin = "taskset"
	}
	fmt.Fprintf(lf, "==== bench: %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &proc{name: name, log: logFile, cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		p.started = time.Now()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		lf.Close()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		lf.Close()
		return nil, fmt.Errorf("%s: starting %s: %w", name, bin, err)
	}
	procsMu.Lock()
	procs = append(procs, p)
	procsMu.Unlock()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits for the exit, SIGKILL after 10s.
func (p *proc) stop() {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// failure names the process that failed, and its log with its last lines.
func (p *proc) failure(err error) error {
	return fmt.Errorf("%s failed: %w\n  its log: %s\n%s", p.name, err, p.log, tail(p.log, 15))
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
func rssBytes(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading RSS of %d: %w", pid, err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("VmRSS of %d: %w", pid, err)
				}
				return kb * 1024, nil
			}
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
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

// tail returns the last n lines of the file at path, indented.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("    (cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n")
}

var errExited = errors.New("exited")
