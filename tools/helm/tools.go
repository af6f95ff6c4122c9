//go:build tools

// Package tools pins the helm version hack/build-helm.sh builds (for the chart's tests in
// deploy/chart); nothing imports it. A module of its own, as tools/promtool: helm's
// dependencies must not move the versions kube-apiserver, etcd or promtool are built with.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
