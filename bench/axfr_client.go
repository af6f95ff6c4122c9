package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Phase X's AXFR client runs as a child process of the harness (this binary, `axfr-client`),
// at a lower CPU priority (-axfr-nice, default 10), on the CPU the harness and dnsperf share. A
// secondary runs on another machine: in the harness's process, at dnsperf's priority, checking
// 380k records per transfer took CPU time from dnsperf, whose replies then waited in its socket,
// and that showed as the latency of the server measured (p99 3.7 x idle, against 1.8-1.9 x with
// the client at nice 5 or 10). At nice 19 it got so little that the client, not the server,
// set the pace of a transfer (10 s instead of 4-5).

// axfrClientArg is the subcommand that runs the client: axfr-client SERVER ZONE WANTFILE. It
// transfers the zone back to back until its standard input closes, and prints each transfer
// as one JSON line (axfrReport).
const axfrClientArg = "axfr-client"

type axfrReport struct {
	Took     time.Duration  `json:"took"`
	Records  int            `json:"records"`
	Messages int            `json:"messages"`
	Bytes    int64          `json:"bytes"`
	Names    int            `json:"names"`
	Types    map[string]int `json:"types"`
	Error    string         `json:"error,omitempty"`
}

// axfrClientMain is the child's main.
func axfrClientMain(args []string) int {
	if len(args) != 3 {
		fmt.Fprintf(os.Stderr, "usage: bench %s SERVER ZONE WANTFILE\n", axfrClientArg)
		return 2
	}
	server, zone, wantFile := args[0], args[1], args[2]
	data, err := os.ReadFile(wantFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	want := map[string]bool{}
	for _, n := range strings.Fields(string(data)) {
		want[n] = true
	}
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	enc := json.NewEncoder(os.Stdout)
	for {
		select {
		case <-stop:
			return 0
		default:
		}
		x, err := axfr(server, zone, want)
		r := axfrReport{Took: x.took, Records: x.records, Messages: x.messages, Bytes: x.bytes, Names: x.names, Types: x.types}
		if err != nil {
			r.Error = err.Error()
		}
		if err := enc.Encode(r); err != nil {
			return 1
		}
		if r.Error != "" {
			return 0
		}
	}
}

// axfrChild is a running client.
type axfrChild struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	reports chan axfrReport
	done    chan error
}

// startAXFRLoop starts the client on server for the zone, checking each transfer for every
// name of want (written to the run directory as name-want.txt); name also names its log.
func (h *harness) startAXFRLoop(server, name string, want map[string]bool) (*axfrChild, error) {
	wantFile := filepath.Join(h.runDir, name+"-want.txt")
	if err := os.WriteFile(wantFile, []byte(strings.Join(slices.Sorted(maps.Keys(want)), "\n")), 0o644); err != nil {
		return nil, err
	}
	return startAXFRClient(server, zone, wantFile, filepath.Join(h.runDir, name+".log"), h.opt.axfrNice)
}

// startAXFRClient starts the client on server for zone, want written to wantFile, at nice.
func startAXFRClient(server, zone, wantFile, logFile string, nice int) (*axfrChild, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("nice", "-n", strconv.Itoa(nice), self, axfrClientArg, server, zone, wantFile)
	lf, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = lf
	stdin, err := cmd.StdinPipe()
	if err != nil {
		lf.Close()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		lf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("starting the AXFR client: %w", err)
	}
	c := &axfrChild{cmd: cmd, stdin: stdin, reports: make(chan axfrReport, 1024), done: make(chan error, 1)}
	go func() {
		defer lf.Close()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var r axfrReport
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				c.done <- fmt.Errorf("AXFR client: %q: %w", sc.Text(), err)
				_ = cmd.Wait()
				return
			}
			c.reports <- r
		}
		close(c.reports)
		c.done <- cmd.Wait()
	}()
	return c, nil
}

// finish lets the client end after its transfer in progress, bounded by timeout, and returns
// every transfer it made.
func (c *axfrChild) finish(timeout time.Duration) ([]xfer, error) {
	_ = c.stdin.Close()
	var ts []xfer
	var first error
	deadline := time.After(timeout)
	for {
		select {
		case r, ok := <-c.reports:
			if !ok {
				if err := <-c.done; err != nil && first == nil {
					first = fmt.Errorf("AXFR client: %w", err)
				}
				return ts, first
			}
			if r.Error != "" && first == nil {
				first = errors.New(r.Error)
			}
			ts = append(ts, xfer{took: r.Took, records: r.Records, messages: r.Messages, bytes: r.Bytes, names: r.Names, types: r.Types})
		case <-deadline:
			_ = c.cmd.Process.Kill()
			return ts, fmt.Errorf("the AXFR client did not end within %s", timeout)
		}
	}
}
