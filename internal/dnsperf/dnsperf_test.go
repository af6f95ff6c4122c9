package dnsperf

import (
	"maps"
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
	// The fixture is a real run: whoami answers ok.test, a gatewaydns stanza without its etcd
	// answers SERVFAIL for fail.test, and other.test is no zone of the server.
	if res.Sent != 6 || res.Completed != 6 || res.Lost != 0 || res.QPS != 2054.091065 {
		t.Errorf("counts: %+v", res)
	}
	if want := map[string]int64{"NOERROR": 2, "SERVFAIL": 2, "REFUSED": 2}; !maps.Equal(res.Rcodes, want) {
		t.Errorf("rcodes %v, want %v", res.Rcodes, want)
	}
	if res.Avg != 223*time.Microsecond || res.Min != 56*time.Microsecond || res.Max != 617*time.Microsecond || res.StdDev != 202*time.Microsecond {
		t.Errorf("latency: avg %v min %v max %v stddev %v", res.Avg, res.Min, res.Max, res.StdDev)
	}
	us := func(n ...time.Duration) (d []time.Duration) {
		for _, v := range n {
			d = append(d, v*time.Microsecond)
		}
		return d
	}
	if want := us(617, 186, 234, 56, 122, 127); !slices.Equal(res.Latencies, want) {
		t.Errorf("per-question latencies %v, want %v", res.Latencies, want)
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
	o := Options{Server: "127.0.0.1:1053", Data: "q", Duration: 1500 * time.Millisecond, Clients: 4, MaxQPS: 5000, Timeout: 250 * time.Millisecond}
	got, err := o.Args()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-s", "127.0.0.1", "-p", "1053", "-d", "q", "-l", "1.5", "-c", "4", "-T", "1", "-t", "0.25", "-Q", "5000"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, err := (Options{Server: "no-port"}).Args(); err == nil {
		t.Fatal("a server without a port was accepted")
	}
}
