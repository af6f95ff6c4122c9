package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// gcTraceEnv makes a Go child process log a line per garbage collection (GODEBUG=gctrace=1),
// from which liveHeaps reads its live heap.
const gcTraceEnv = "GODEBUG=gctrace=1"

// liveHeaps reads the gctrace lines of a log ("gc 12 @3.4s 2%: ... 110->115->60 MB, ...") and
// returns the largest live heap a collection left, and the last one, in bytes: the heap the
// process needed, where its RSS also holds the garbage GOGC lets grow between collections.
func liveHeaps(logFile string) (largest, last int64, err error) {
	f, err := os.Open(logFile)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	found := false
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "gc ") {
			continue
		}
		for _, field := range strings.Fields(l) {
			parts := strings.Split(field, "->")
			if len(parts) != 3 {
				continue
			}
			if !strings.Contains(l[strings.Index(l, field)+len(field):], " MB") {
				break
			}
			mb, perr := strconv.ParseInt(parts[2], 10, 64)
			if perr != nil {
				break
			}
			last, found = mb<<20, true
			largest = max(largest, last)
			break
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if !found {
		return 0, 0, fmt.Errorf("%s: no gctrace line", logFile)
	}
	return largest, last, nil
}
