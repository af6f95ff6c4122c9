package xfr

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
)

// servicesBackend answers every question with the same services: what plugin.SRV is given for
// one name.
type servicesBackend struct {
	plugin.ServiceBackend
	services []msg.Service
}

func (b servicesBackend) Services(context.Context, request.Request, bool, plugin.Options) ([]msg.Service, error) {
	return b.services, nil
}

// TestPlainSRVIsWhatPluginSRVAnswers: for address services (record-id children of the name and
// keys elsewhere, any target strip, priorities, weights and ports, duplicates, port -1),
// appendPlainSRV makes exactly the SRV records plugin.SRV answers, in its order.
func TestPlainSRVIsWhatPluginSRVAnswers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{
		"/skydns/cluster/openmcp/eu1/app/3e6bee2e",
		"/skydns/cluster/openmcp/eu1/app/x1",
		"/skydns/cluster/openmcp/eu1/app", // the name's own key
		"/skydns/cluster/openmcp/eu1/app/sub/x2",
		"/skydns/cluster/openmcp/eu2/app/x3",
		"/skydns/cluster/openmcp/eu1/apps/x4",
		"/gatewaydns/cluster/openmcp/eu1/app/x5", // another path prefix
	}
	hosts := []string{"10.0.0.1", "10.0.0.2", "2001:db8::1"}
	for round := range 4000 {
		// The name, or a record-id name below it (whose own key is one of keys).
		name := []string{"app.eu1.openmcp.cluster.", "x1.app.eu1.openmcp.cluster.", "app.eu1.openmcp.cluster."}[rng.IntN(3)]
		n := 1 + rng.IntN(4)
		if round%10 == 0 {
			n = 17 + rng.IntN(30) // past scanSRV: the duplicate check by map
		}
		services := make([]msg.Service, n)
		for i := range services {
			services[i] = msg.Service{
				Host:        hosts[rng.IntN(len(hosts))],
				Key:         keys[rng.IntN(len(keys))],
				TTL:         uint32(30 + rng.IntN(3)),
				Priority:    []int{0, 0, 10, 20}[rng.IntN(4)],
				Weight:      []int{0, 0, 1, 7, 50, 300}[rng.IntN(6)],
				Port:        []int{0, 0, 80, 443, -1}[rng.IntN(5)],
				TargetStrip: []int{0, 1, 1, 1, 2, 9}[rng.IntN(6)],
			}
		}
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeSRV)
		want, _, err := plugin.SRV(context.Background(), servicesBackend{services: services}, "openmcp.cluster.",
			request.Request{Req: m, Zone: "openmcp.cluster."}, plugin.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := appendPlainSRV(nil, name, services)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d, services %+v:\n got %v\nwant %v", round, services, got, want)
		}
	}
}
