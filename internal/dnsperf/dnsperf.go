// Package dnsperf runs the dnsperf load generator (Debian package dnsperf) against a DNS server
// and reads its report: the load of the soak test and of make bench.
package dnsperf

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/child"
)

// Options are dnsperf's client settings; every server of a comparison gets the same.
type Options struct {
	Server      string // host:port
	Data        string // the question file: "name TYPE" per line
	Duration    time.Duration
	Clients     int           // -c; 1 when 0
	Threads     int           // -T; 1 when 0
	Outstanding int           // -q; dnsperf's 100 when 0
	MaxQPS      int           // -Q; 0 for as many as the server takes
	Runs        int           // -n: through the question file at most this many times; 0: no bound
	Timeout     time.Duration // -t: when a question counts as lost; dnsperf's 5s when 0
	Verbose     bool          // -v: one line per question, for latency percentiles
	CPU         string        // a taskset CPU list to pin dnsperf to; none when empty
	// Log receives dnsperf's output but for the per-question lines; discarded when nil.
	Log io.Writer
}

// Args are the dnsperf flags of o.
func (o Options) Args() ([]string, error) {
	host, port, err := net.SplitHostPort(o.Server)
	if err != nil {
		return nil, fmt.Errorf("dnsperf: server %q: %w", o.Server, err)
	}
	args := []string{"-s", host, "-p", port, "-d", o.Data,
		"-l", strconv.FormatFloat(o.Duration.Seconds(), 'f', -1, 64),
		"-c", strconv.Itoa(max(o.Clients, 1)), "-T", strconv.Itoa(max(o.Threads, 1))}
	if o.Outstanding > 0 {
		args = append(args, "-q", strconv.Itoa(o.Outstanding))
	}
	if o.Timeout > 0 {
		args = append(args, "-t", strconv.FormatFloat(o.Timeout.Seconds(), 'f', -1, 64))
	}
	if o.MaxQPS > 0 {
		args = append(args, "-Q", strconv.Itoa(o.MaxQPS))
	}
	if o.Runs > 0 {
		args = append(args, "-n", strconv.Itoa(o.Runs))
	}
	if o.Verbose {
		args = append(args, "-v")
	}
	return args, nil
}

// Result is what one dnsperf run reports.
type Result struct {
	Sent, Completed, Lost int64
	QPS                   float64
	Avg, Min, Max, StdDev time.Duration
	Rcodes                map[string]int64 // "NOERROR" -> answers
	Latencies             []time.Duration  // one per answered question, with Verbose
}

var (
	reSent      = regexp.MustCompile(`Queries sent:\s+(\d+)`)
	reCompleted = regexp.MustCompile(`Queries completed:\s+(\d+)`)
	reLost      = regexp.MustCompile(`Queries lost:\s+(\d+)`)
	reQPS       = regexp.MustCompile(`Queries per second:\s+([0-9.]+)`)
	reAvg       = regexp.MustCompile(`Average Latency \(s\):\s+([0-9.]+) \(min ([0-9.]+), max ([0-9.]+)\)`)
	reStdDev    = regexp.MustCompile(`Latency StdDev \(s\):\s+([0-9.]+)`)
	reRcode     = regexp.MustCompile(`([A-Z]+) (\d+) \([0-9.]+%\)`)
)

func seconds(s string) time.Duration {
	f, _ := strconv.ParseFloat(s, 64)
	return time.Duration(f * float64(time.Second))
}

// Parse reads dnsperf's output: the per-question lines of -v ("> NOERROR name A 0.000123")
// and the statistics at its end. Every other line is copied to log (may be nil).
func Parse(r io.Reader, log io.Writer) (Result, error) {
	res := Result{Rcodes: map[string]int64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	seenQPS := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "> ") {
			if f := strings.Fields(line); len(f) >= 5 {
				if _, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
					res.Latencies = append(res.Latencies, seconds(f[len(f)-1]))
				}
			}
			continue
		}
		if log != nil {
			fmt.Fprintln(log, line)
		}
		first := func(re *regexp.Regexp) (string, bool) {
			if m := re.FindStringSubmatch(line); m != nil {
				return m[1], true
			}
			return "", false
		}
		if s, ok := first(reSent); ok {
			res.Sent, _ = strconv.ParseInt(s, 10, 64)
		} else if s, ok := first(reCompleted); ok {
			res.Completed, _ = strconv.ParseInt(s, 10, 64)
		} else if s, ok := first(reLost); ok {
			res.Lost, _ = strconv.ParseInt(s, 10, 64)
		} else if s, ok := first(reQPS); ok {
			res.QPS, _ = strconv.ParseFloat(s, 64)
			seenQPS = true
		} else if m := reAvg.FindStringSubmatch(line); m != nil {
			res.Avg, res.Min, res.Max = seconds(m[1]), seconds(m[2]), seconds(m[3])
		} else if s, ok := first(reStdDev); ok {
			res.StdDev = seconds(s)
		} else if strings.Contains(line, "Response codes:") {
			for _, m := range reRcode.FindAllStringSubmatch(line, -1) {
				res.Rcodes[m[1]], _ = strconv.ParseInt(m[2], 10, 64)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return res, fmt.Errorf("reading dnsperf output: %w", err)
	}
	if !seenQPS {
		return res, errors.New("no statistics in dnsperf's output")
	}
	return res, nil
}

// Run runs the dnsperf binary at path with o, and returns its report.
func Run(ctx context.Context, path string, o Options) (Result, error) {
	args, err := o.Args()
	if err != nil {
		return Result{}, err
	}
	if o.CPU != "" {
		args = append([]string{"-c", o.CPU, path}, args...)
		path = "taskset"
	}
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	fmt.Fprintf(log, "==== %s %s\n", path, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stderr = log
	// dnsperf dies with the process that started it, should that one be killed.
	child.DieWithParent(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, fmt.Errorf("dnsperf: %w", err)
	}
	// Pdeathsig follows the thread that started the child: keep it for the child's life.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("dnsperf: starting %s: %w", path, err)
	}
	res, perr := Parse(out, log)
	if err := cmd.Wait(); err != nil {
		return res, fmt.Errorf("dnsperf against %s: %w", o.Server, err)
	}
	if perr != nil {
		return res, fmt.Errorf("dnsperf against %s: %w", o.Server, perr)
	}
	return res, nil
}
