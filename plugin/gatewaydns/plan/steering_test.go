package plan

import (
	"testing"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// TestSteeringChangeRewritesTheNamesKeys: a policy added, changed or removed rewrites the
// owner's keys of the name in place (same keys: the policy is no part of a key), and a policy
// as etcd holds it writes nothing.
func TestSteeringChangeRewritesTheNamesKeys(t *testing.T) {
	plain := ep(name, 60, "10.0.0.1", "10.0.0.2")
	weighted := plain
	weighted.Steering = record.Steering{Weight: 90, Weighted: true, HealthCheck: "tcp://:443"}
	standby := plain
	standby.Steering = record.Steering{Priority: 1}
	for _, tc := range []struct {
		behaviour  string
		have, want record.Endpoint
		rewrites   bool
	}{
		{"no policy, none wanted", plain, plain, false},
		{"the policy etcd holds", weighted, weighted, false},
		{"a policy added", plain, weighted, true},
		{"a policy changed", weighted, standby, true},
		{"a policy removed", standby, plain, true},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			p := Make(Input{Prefix: "skydns", Owner: me, Synced: true, Names: []string{name}, Desired: []record.Endpoint{tc.want},
				Current: []KV{own(tc.have, "10.0.0.1", 5), own(tc.have, "10.0.0.2", 5)}})
			if !tc.rewrites {
				if len(p.Changes) != 0 {
					t.Fatalf("changes %v", p.Changes)
				}
				return
			}
			if len(p.Changes) != 1 || len(p.Changes[0].Puts) != 2 || len(p.Changes[0].Deletes) != 0 {
				t.Fatalf("want both keys put again in place, got %v", p.Changes)
			}
			for _, put := range p.Changes[0].Puts {
				v, err := record.Decode(put.Key, put.Value)
				if err != nil || v.Steering != tc.want.Steering {
					t.Errorf("%s = %s: steering %+v, %v; want %+v", put.Key, put.Value, v.Steering, err, tc.want.Steering)
				}
			}
		})
	}
}
