// Package store is how gatewaydns reaches etcd: the client configuration both roles share, and
// reading a whole zone in pages.
// The serve path's watcher is package mirror, the publish path's writer package writer. It
// knows nothing of Kubernetes and is never called from a DNS query.
package store

import (
	"crypto/tls"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// DefaultEndpoint is the stock etcd plugin's default.
const DefaultEndpoint = "http://localhost:2379"

// keepAlive matches the stock etcd plugin, so a dead connection is noticed in seconds.
const keepAlive = 5 * time.Second

// Config is how to reach etcd.
type Config struct {
	Endpoints []string
	TLS       *tls.Config // nil for plain HTTP
	Username  string
	Password  string
}

// NewClient returns a client that connects in the background: a store that is down at start
// is retried, not fatal.
func NewClient(cfg Config) (*clientv3.Client, error) {
	endpoints := cfg.Endpoints
	if len(endpoints) == 0 {
		endpoints = []string{DefaultEndpoint}
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		TLS:                  cfg.TLS,
		Username:             cfg.Username,
		Password:             cfg.Password,
		DialKeepAliveTime:    keepAlive,
		DialKeepAliveTimeout: keepAlive,
		// Our own errors say what failed and are counted; the client's retry chatter is noise.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", endpoints, err)
	}
	return c, nil
}
