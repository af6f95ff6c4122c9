//go:build tools

// Package tools pins the versions of the real components that the
// integration tests run (kube-apiserver, kubeadm, etcd, etcdctl, etcdutl). They are built by
// hack/build-test-binaries.sh; nothing imports this package.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubeadm"
)
