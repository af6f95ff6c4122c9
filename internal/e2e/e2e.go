// Package e2e holds what the end-to-end test packages under tests/ share, by job:
//
//   - dns.go: asking questions and judging replies (Ask, WaitFor, AnswersWith, Render...);
//   - pollers.go: questions and readiness probes asked all along an event (PollDNS,
//     PollReady), and Settle;
//   - etcd.go: a test's own reads and writes of etcd (KeysUnder, PutEtcd, PutInTxns, OwnKey);
//   - corefiles.go: the Corefiles of the roles and the processes that run them (RunCentral,
//     RunWriter, BothRoles, RunCorefile of corefile.d, StartReloading);
//   - landscapes.go: components put together for a test (ServeZone, OutageLandscape, Proxied);
//   - metrics.go: checks of a /metrics body (CheckSeries, Samples) and of this process's
//     registry (MetricSum);
//   - inprocess.go: CoreDNS run inside the test process (StartCoreDNS);
//   - kube.go and http.go: a wait on a Kubernetes object, and a plain GET.
//
// The CoreDNS process itself is internal/corednsproc's; etcd and kube-apiserver are
// internal/testenv's.
package e2e
