package publish

import (
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/kubesource"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// desired adapts the kubesource's merged endpoints to what the writer asks.
type desired struct{ kube *kubesource.Watcher }

func (d desired) Endpoint(name string) (record.Endpoint, bool) {
	return d.kube.Desired().Endpoint(name)
}

func (d desired) Names() []string { return d.kube.Desired().Names() }

func (d desired) Synced() bool { return d.kube.Synced() }

func (d desired) SyncedC() <-chan struct{} { return d.kube.SyncedC() }
