package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// runTB lets the harness reuse internal/testenv and internal/gatewayfixture, which take a
// testing.TB, outside a test. Fatal panics with a fatalError that runPhase recovers; Cleanup
// functions run, last first, when cleanup is called (at the end of the run, on a failure and on
// Ctrl-C). TempDir makes directories under the run's directory and keeps them, so that the logs
// of etcd and kube-apiserver survive the run. Only the methods those packages call are
// implemented; the embedded nil testing.TB makes any other call panic loudly.
type runTB struct {
	testing.TB
	dir string

	mu       sync.Mutex
	cleanups []func()
	tmp      int
	failed   bool
	silenced bool
}

// fatalError is what runTB's Fatal and Fatalf panic with.
type fatalError struct{ msg string }

func (e fatalError) Error() string { return e.msg }

func newRunTB(dir string) *runTB { return &runTB{dir: dir} }

func (t *runTB) Helper()      {}
func (t *runTB) Name() string { return "bench" }

func (t *runTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// cleanup runs the registered functions, last first, each once.
func (t *runTB) cleanup() {
	for {
		t.mu.Lock()
		n := len(t.cleanups)
		if n == 0 {
			t.mu.Unlock()
			return
		}
		f := t.cleanups[n-1]
		t.cleanups = t.cleanups[:n-1]
		t.mu.Unlock()
		func() {
			defer func() {
				if r := recover(); r != nil {
					logf("cleanup: %v", r)
				}
			}()
			f()
		}()
	}
}

func (t *runTB) TempDir() string {
	t.mu.Lock()
	t.tmp++
	dir := filepath.Join(t.dir, fmt.Sprintf("tmp%02d", t.tmp))
	t.mu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("creating %s: %v", dir, err)
	}
	return dir
}

func (t *runTB) Logf(format string, args ...any) { logf(format, args...) }
func (t *runTB) Log(args ...any)                 { logf("%s", fmt.Sprint(args...)) }

func (t *runTB) Errorf(format string, args ...any) {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	logf("error: "+format, args...)
}

func (t *runTB) Error(args ...any) { t.Errorf("%s", fmt.Sprint(args...)) }

func (t *runTB) Fatalf(format string, args ...any) {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	panic(fatalError{fmt.Sprintf(format, args...)})
}

func (t *runTB) Fatal(args ...any)                { t.Fatalf("%s", fmt.Sprint(args...)) }
func (t *runTB) FailNow()                         { t.Fatalf("failed") }
func (t *runTB) Fail()                            { t.mu.Lock(); t.failed = true; t.mu.Unlock() }
func (t *runTB) Skip(args ...any)                 { t.Fatalf("%s", fmt.Sprint(args...)) }
func (t *runTB) Skipf(format string, args ...any) { t.Fatalf(format, args...) }

// Failed is what internal/testenv asks before printing a component's log; after quiet it
// says false.
func (t *runTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed && !t.silenced
}

func (t *runTB) quiet() {
	t.mu.Lock()
	t.silenced = true
	t.mu.Unlock()
}

// catch turns a fatalError panic of f into an error; other panics go on.
func catch(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			fe, ok := r.(fatalError)
			if !ok {
				panic(r)
			}
			err = fe
		}
	}()
	return f()
}
