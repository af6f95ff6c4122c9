// Package cpuuse measures the CPU time of this process, for benchmarks that run on a shared
// machine: there the wall time of ns/op grows with everyone else's load, the CPU time spent
// much less.
package cpuuse

import (
	"syscall"
	"testing"
	"time"
)

// Now is the CPU time (user and system) the process has used so far.
func Now() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
}

// PerOp starts counting the process's CPU time; the func it returns reports it per op of b as
// cpu-ns/op. Call it before b.Loop and defer the func.
func PerOp(b *testing.B) func() {
	start := Now()
	return func() { b.ReportMetric(float64(Now()-start)/float64(b.N), "cpu-ns/op") }
}
