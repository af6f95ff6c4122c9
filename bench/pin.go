package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// pinHarness moves every thread of the benchmark's own process to the CPUs of cpuList, with
// taskset -a, and returns what puts them back where they were. Phase X's AXFR client, a child
// of this process, inherits the CPUs: unpinned it would take CPU time from the server it
// measures, which a secondary on another machine never does.
func pinHarness(cpuList string) (restore func(), err error) {
	pid := strconv.Itoa(os.Getpid())
	out, err := exec.Command("taskset", "-c", "-p", pid).Output()
	if err != nil {
		return nil, fmt.Errorf("taskset -c -p %s: %w", pid, err)
	}
	// "pid 123's current affinity list: 0,1"
	_, was, ok := strings.Cut(strings.TrimSpace(string(out)), ": ")
	if !ok {
		return nil, fmt.Errorf("taskset -c -p %s: unexpected output %q", pid, out)
	}
	if out, err := exec.Command("taskset", "-a", "-c", "-p", cpuList, pid).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("taskset -a -c -p %s %s: %w: %s", cpuList, pid, err, out)
	}
	return func() {
		if out, err := exec.Command("taskset", "-a", "-c", "-p", was, pid).CombinedOutput(); err != nil {
			logf("putting the harness back on CPUs %s: %v: %s", was, err, out)
		}
	}, nil
}
