package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/gatewaydns/gatewaydns/internal/dnsperf"
)

// perfString is the client settings of o as dnsperf flags, for the report: what every
// backend of a comparison was measured with.
func perfString(o dnsperf.Options) string {
	o.Server, o.Data = "127.0.0.1:53", "FILE"
	a, err := o.Args()
	if err != nil {
		return fmt.Sprintf("dnsperf (%v)", err)
	}
	return "dnsperf " + strings.Join(a[4:], " ") // without -s and -p: they differ per backend
}

// runDnsperf runs dnsperf with o against server, asking the questions of the file input; its
// output, less the per-question lines, is appended to logFile.
func runDnsperf(o dnsperf.Options, server, input, logFile string) (dnsperf.Result, error) {
	lf, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return dnsperf.Result{}, fmt.Errorf("dnsperf: %w", err)
	}
	defer lf.Close()
	o.Server, o.Data, o.Log = server, input, lf
	res, err := dnsperf.Run(context.Background(), "dnsperf", o)
	if err != nil {
		return res, fmt.Errorf("%w (its output: %s)", err, logFile)
	}
	return res, nil
}
