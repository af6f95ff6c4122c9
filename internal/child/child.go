// Package child runs helper processes (etcd, CoreDNS, dnsperf) for the tests, make demo and
// make bench so that they die with the process that started them, even when that one is killed,
// and stops them.
package child

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// Process is a started command, its output going to a log file.
type Process struct {
	Name string // what it is, for messages
	Log  string // the file its output goes to
	Cmd  *exec.Cmd

	exited chan struct{}
	err    error
}

// Start runs cmd with its output appended to logFile, after a line with the time and the command
// line (a restarted process adds to the same log). On Linux the child gets SIGKILL when this
// process dies (Pdeathsig), even on a panic or a test timeout where no cleanup runs: Linux ties
// that to the thread that forked the child, not to the process, so the goroutine that starts it
// keeps its thread locked for the child's whole life, waiting for it.
func Start(name, logFile string, cmd *exec.Cmd) (*Process, error) {
	lf, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: opening its log: %w", name, err)
	}
	fmt.Fprintf(lf, "==== %s %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(cmd.Args, " "))
	cmd.Stdout, cmd.Stderr = lf, lf
	DieWithParent(cmd)
	p := &Process{Name: name, Log: logFile, Cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
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
		return nil, fmt.Errorf("%s: starting %s: %w", name, cmd.Path, err)
	}
	return p, nil
}

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is how the process ended (exec.Cmd.Wait's error) once Exited is closed.
func (p *Process) Err() error {
	<-p.exited
	return p.err
}

// Running tells whether the process has not exited yet.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Stop sends sig (SIGTERM for a graceful stop, SIGKILL for a crash) and waits for the exit;
// after grace it sends SIGKILL. It reports whether the process was gone within grace (one that
// had exited before counts), so that a test can fail a process that does not stop when told.
func (p *Process) Stop(sig os.Signal, grace time.Duration) (inGrace bool) {
	if !p.Running() {
		return true
	}
	_ = p.Cmd.Process.Signal(sig)
	select {
	case <-p.exited:
		return true
	case <-time.After(grace):
		_ = p.Cmd.Process.Kill()
		<-p.exited
		return false
	}
}
