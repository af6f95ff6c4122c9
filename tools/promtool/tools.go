//go:build tools

// Package tools pins promtool (github.com/prometheus/prometheus/cmd/promtool), which
// tests/monitoring_test.go runs as `promtool test rules` against deploy/monitoring/. A module
// of its own, apart from tools/go.mod: Prometheus's dependencies would otherwise move the
// versions kube-apiserver and etcd are built with, and every machine would rebuild them.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
