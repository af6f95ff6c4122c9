package healthcheck

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/cpuuse"
)

// BenchmarkProbe is the cost of one check against a loopback listener in this process, one
// after the other: on loopback the kernel's work of both ends of the connection is in it.
func BenchmarkProbe(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	p := newProber(time.Second)
	for _, hc := range []string{"tcp://:" + port, "http://:" + port + "/healthz"} {
		tg := Target{Addr: "127.0.0.1", Check: check(b, hc)}
		b.Run(tg.Check.Scheme, func(b *testing.B) {
			b.ReportAllocs()
			defer cpuuse.PerOp(b)()
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				if err := p.check(ctx, tg); err != nil {
					b.Fatal(err)
				}
				cancel()
			}
		})
	}
}
