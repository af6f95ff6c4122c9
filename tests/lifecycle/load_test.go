package lifecycle

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/dnsperf"
)

// dnsLoad is dnsperf asking a server for the whole of a test step.
type dnsLoad struct {
	started time.Time
	length  time.Duration
	done    chan struct{}
	res     dnsperf.Result
	err     error
}

// loadDuring starts dnsperf against addr with the questions of data ("name TYPE" lines) for
// length, at a rate a shared 2-core machine keeps up with: a test of answers under load, not
// of throughput. It returns nil when dnsperf is not installed (.ci/run installs it).
func loadDuring(t *testing.T, addr, data string, length time.Duration) *dnsLoad {
	t.Helper()
	perf, err := exec.LookPath("dnsperf")
	if err != nil {
		t.Logf("dnsperf is not installed: no load during this step")
		return nil
	}
	file := filepath.Join(t.TempDir(), "questions")
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	l := &dnsLoad{started: time.Now(), length: length, done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), length+30*time.Second)
	go func() {
		defer close(l.done)
		defer cancel()
		l.res, l.err = dnsperf.Run(ctx, perf, dnsperf.Options{Server: addr, Data: file, Duration: length, Clients: 4, MaxQPS: 2000})
	}()
	t.Cleanup(func() { cancel(); <-l.done })
	return l
}

// finish fails the test unless the load lasted past now (it covered the whole step), every
// answer was NOERROR, and at most one question in a thousand went unanswered.
func (l *dnsLoad) finish(t *testing.T, what string) {
	t.Helper()
	if l == nil {
		return
	}
	if time.Since(l.started) >= l.length {
		t.Errorf("%s: the step outlasted its %s of dnsperf load, so the load did not cover it", what, l.length)
	}
	<-l.done
	if l.err != nil {
		t.Fatalf("%s: dnsperf: %v", what, l.err)
	}
	t.Logf("%s: dnsperf sent %d questions, %d answered (%v), %d lost", what, l.res.Sent, l.res.Completed, l.res.Rcodes, l.res.Lost)
	if l.res.Completed == 0 {
		t.Errorf("%s: dnsperf got no answer", what)
	}
	for rcode, n := range l.res.Rcodes {
		if rcode != "NOERROR" {
			t.Errorf("%s: %d answers were %s", what, n, rcode)
		}
	}
	if l.res.Lost > l.res.Sent/1000 {
		t.Errorf("%s: %d of %d questions went unanswered", what, l.res.Lost, l.res.Sent)
	}
}
