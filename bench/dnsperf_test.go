package main

import (
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/dnsperf"
)

func TestPerfStringLeavesOutTheServer(t *testing.T) {
	o := dnsperf.Options{Server: "127.0.0.1:1053", Data: "q.txt", Duration: 10 * time.Second,
		Clients: 8, Threads: 2, Outstanding: 200, Timeout: time.Second}
	if got, want := perfString(o), "dnsperf -d FILE -l 10 -c 8 -T 2 -q 200 -t 1"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
