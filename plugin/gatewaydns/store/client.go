// Package store is how gatewaydns reaches etcd: the client configuration both roles share,
// reading a whole zone in pages, and the lifetime of what an attempt opens on the connection
// (watch streams, the wait for the connection to come back).
// The serve path's watcher is package mirror, the publish path's writer package writer. It
// knows nothing of Kubernetes and is never called from a DNS query.
package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
)

// DefaultEndpoint is the stock etcd plugin's default.
const DefaultEndpoint = "http://localhost:2379"

// keepAlive matches the stock etcd plugin, so a dead connection is noticed in seconds.
const keepAlive = 5 * time.Second

// reconnect is how gRPC spaces its dials to an etcd that refuses them. Its default grows to
// 120 s, so an etcd back after a long outage stayed unused for up to two minutes; a dial to a
// closed port costs next to nothing, and recovery within a second of etcd answering needs the
// next dial within a second. connectTimeout bounds one dial's TCP and TLS handshake: a dial
// into a black hole must not hold the next one back for gRPC's default 20 s.
var (
	reconnect = grpcbackoff.Config{
		BaseDelay:  100 * time.Millisecond,
		Multiplier: 1.6,
		Jitter:     0.2,
		MaxDelay:   500 * time.Millisecond,
	}
	connectTimeout = 5 * time.Second
)

// Gauge counts something up and down; a prometheus.Gauge is one.
type Gauge interface {
	Inc()
	Dec()
}

// Config is how to reach etcd.
type Config struct {
	Endpoints []string
	TLS       *tls.Config // nil for plain HTTP
	Username  string
	Password  string
	// WatchStreams, when set, counts the client's open watch streams (see streamCounter):
	// what an outage must leave as it found.
	WatchStreams Gauge
}

// NewClient returns a client that connects in the background: a store that is down at start
// is retried, not fatal. The roles use Connect, which adds the Members and the Lineage.
func NewClient(cfg Config) (*clientv3.Client, error) { return newClient(cfg) }

// newClient is NewClient with extra dial options (Connect's Lineage).
func newClient(cfg Config, extra ...grpc.DialOption) (*clientv3.Client, error) {
	endpoints := cfg.Endpoints
	if len(endpoints) == 0 {
		endpoints = []string{DefaultEndpoint}
	}
	dial := []grpc.DialOption{
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: reconnect, MinConnectTimeout: connectTimeout}),
	}
	if cfg.WatchStreams != nil {
		dial = append(dial, grpc.WithStatsHandler(streamCounter{cfg.WatchStreams}))
	}
	dial = append(dial, extra...)
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		TLS:                  cfg.TLS,
		Username:             cfg.Username,
		Password:             cfg.Password,
		DialKeepAliveTime:    keepAlive,
		DialKeepAliveTimeout: keepAlive,
		DialOptions:          dial,
		// Our own errors say what failed and are counted; the client's retry chatter is noise.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", endpoints, err)
	}
	return c, nil
}

// Close closes c within wait, which bounds a stop whatever state etcd is in; what names the
// client in the error.
func Close(c *clientv3.Client, what string, wait time.Duration) error {
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case err := <-closed:
		if err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("closing the etcd client of %s: %w", what, err)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("the etcd client of %s did not close within %s", what, wait)
	}
}
