package dnsperf

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseReadsTheStatisticsAndPerQuestionLatencies(t *testing.T) {
	f, err := os.Open("testdata/dnsperf-2.10.out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var log strings.Builder
	res, err := Parse(f, &log)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 2000 || res.Completed != 2000 || res.Lost != 0 || res.QPS < 1999 || res.QPS > 2000 {
		t.Errorf("counts: %+v", res)
	}
	if want := map[string]int64{"NOERROR": 666, "SERVFAIL": 334, "REFUSED": 1000}; len(res.Rcodes) != 3 ||
		res.Rcodes["NOERROR"] != want["NOERROR"] || res.Rcodes["SERVFAIL"] != want["SERVFAIL"] || res.Rcodes["REFUSED"] != want["REFUSED"] {
		t.Errorf("rcodes %v, want %v", res.Rcodes, want)
	}
	if res.Avg != 390*time.Microsecond || res.Min != 38*time.Microsecond || res.Max != 15395*time.Microsecond || res.StdDev != 1312*time.Microsecond {
		t.Errorf("latency: avg %v min %v max %v stddev %v", res.Avg, res.Min, res.Max, res.StdDev)
	}
	if !slices.Equal(res.Latencies, []time.Duration{1183 * time.Microsecond, 205 * time.Microsecond}) {
		t.Errorf("per-question latencies %v", res.Latencies)
	}
	if strings.Contains(log.String(), "> NOERROR") || !strings.Contains(log.String(), "Queries sent") {
		t.Errorf("the log should hold the report without the per-question lines:\n%s", log.String())
	}
}

func TestParseRejectsOutputWithoutStatistics(t *testing.T) {
	if _, err := Parse(strings.NewReader("[Fatal] unable to open file\n"), nil); err == nil {
		t.Fatal("no error for output without statistics")
	}
}

func TestArgsAreTheSameForEveryServer(t *testing.T) {
	o := Options{Server: "127.0.0.1:1053", Data: "q", Duration: 1500 * time.Millisecond, Clients: 4, MaxQPS: 5000}
	got, err := o.Args()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-s", "127.0.0.1", "-p", "1053", "-d", "q", "-l", "1.5", "-c", "4", "-T", "1", "-Q", "5000"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, err := (Options{Server: "no-port"}).Args(); err == nil {
		t.Fatal("a server without a port was accepted")
	}
}
