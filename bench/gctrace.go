package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// gcTraceEnv makes a Go child process log a line per garbage collection (GODEBUG=gctrace=1),
// from which gcCycles reads its heap.
const gcTraceEnv = "GODEBUG=gctrace=1"

// gcCycle is one garbage collection as gctrace logs it ("gc 12 @3.4s 2%: 0.1+27+0.01 ms clock,
// ... 110->115->60 MB, ..."): when it ran (from the process start), how long it took by the wall
// clock (its two pauses and the concurrent mark between them, during which the collector takes
// a share of the CPU and goroutines that allocate help it), the heap when it began and ended,
// and the live heap it left. gctrace's "MB" are MiB (bytes >> 20).
type gcCycle struct {
	at, clock          time.Duration
	start, end, marked int64 // bytes
}

// gcCycles reads the gctrace lines of a log, in order.
func gcCycles(logFile string) ([]gcCycle, error) {
	f, err := os.Open(logFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []gcCycle
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if c, ok := parseGCLine(sc.Text()); ok {
			out = append(out, c)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no gctrace line", logFile)
	}
	return out, nil
}

// parseGCLine reads one gctrace line; ok is false for any other line.
func parseGCLine(l string) (gcCycle, bool) {
	fields := strings.Fields(l)
	if len(fields) < 3 || fields[0] != "gc" || !strings.HasPrefix(fields[2], "@") {
		return gcCycle{}, false
	}
	at, err := time.ParseDuration(strings.TrimPrefix(fields[2], "@"))
	if err != nil {
		return gcCycle{}, false
	}
	clock := gcClock(fields)
	for i, field := range fields {
		parts := strings.Split(field, "->")
		if len(parts) != 3 || i+1 >= len(fields) || !strings.HasPrefix(fields[i+1], "MB") {
			continue
		}
		var mbs [3]int64
		for k, p := range parts {
			if mbs[k], err = strconv.ParseInt(p, 10, 64); err != nil {
				return gcCycle{}, false
			}
		}
		return gcCycle{at: at, clock: clock, start: mbs[0] << 20, end: mbs[1] << 20, marked: mbs[2] << 20}, true
	}
	return gcCycle{}, false
}

// gcClock adds up the phases of the "a+b+c ms clock" field of a gctrace line's fields; 0 when
// it has none.
func gcClock(fields []string) time.Duration {
	for i := 1; i+2 < len(fields); i++ {
		if fields[i+1] != "ms" || fields[i+2] != "clock," {
			continue
		}
		var ms float64
		for _, p := range strings.Split(fields[i], "+") {
			v, err := strconv.ParseFloat(p, 64)
			if err != nil {
				return 0
			}
			ms += v
		}
		return time.Duration(ms * float64(time.Millisecond))
	}
	return 0
}

// liveHeaps is the largest live heap a collection left, and the last one: the heap the process
// needed, where its RSS also holds the garbage GOGC lets grow between collections.
func liveHeaps(logFile string) (largest, last int64, err error) {
	cs, err := gcCycles(logFile)
	if err != nil {
		return 0, 0, err
	}
	for _, c := range cs {
		largest = max(largest, c.marked)
	}
	return largest, cs[len(cs)-1].marked, nil
}
