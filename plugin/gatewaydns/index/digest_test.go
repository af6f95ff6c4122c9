package index

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// TestDigestEqualsEtcdsAfterAnyChanges pins that the index's digest of a prefix equals the
// digest of etcd's keys under it (modelled by a map of key to mod revision) after loads and
// batches of puts, updates, deletes and invalid values, with a second prefix loaded alongside
// and a third nested in the first (a zone and its subzone), each reloaded now and then.
func TestDigestEqualsEtcdsAfterAnyChanges(t *testing.T) {
	prefixes := []string{"/skydns/test/a/", "/skydns/test/b/", "/skydns/test/a/k1/"}
	values := []string{`{"host":"10.0.0.1"}`, `{"host":"10.0.0.2","ttl":5}`, `not json`}
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			ix := New(Options{Prefixes: prefixes})
			etcd := map[string]int64{}
			rev := int64(1)
			randomKey := func() string {
				return fmt.Sprintf("%sk%d/x%d", prefixes[rng.IntN(2)], rng.IntN(8), rng.IntN(3))
			}
			for range 10 {
				rev++
				etcd[randomKey()] = rev
			}
			load := func(p string) {
				var kvs []record.KV
				for k, r := range etcd {
					if strings.HasPrefix(k, p) {
						kvs = append(kvs, record.KV{Key: k, Value: []byte(values[rng.IntN(len(values))]), Revision: r})
					}
				}
				ix.Load(p, kvs)
			}
			for _, i := range rng.Perm(len(prefixes)) {
				load(prefixes[i])
			}
			for range 30 {
				var batch []record.Change
				for range 1 + rng.IntN(6) {
					rev++
					k := randomKey()
					if rng.IntN(3) == 0 {
						if _, ok := etcd[k]; !ok {
							continue // etcd sends no event for deleting nothing
						}
						delete(etcd, k)
						batch = append(batch, record.Change{KV: record.KV{Key: k, Revision: rev}, Deleted: true})
						continue
					}
					etcd[k] = rev
					batch = append(batch, record.Change{KV: record.KV{Key: k, Value: []byte(values[rng.IntN(len(values))]), Revision: rev}})
				}
				ix.Apply(batch)
				if rng.IntN(4) == 0 {
					// A reload repairs a put the index missed under its prefix.
					p := prefixes[rng.IntN(len(prefixes))]
					rev++
					etcd[fmt.Sprintf("%smissed/x%d", p, rng.IntN(3))] = rev
					load(p)
				}
				for _, p := range prefixes {
					var want Digest
					for k, r := range etcd {
						if strings.HasPrefix(k, p) {
							want.Add(k, r)
						}
					}
					if got, ok := ix.Digest(p); !ok || got != want {
						t.Fatalf("digest of %s = %+v (%v), etcd's = %+v", p, got, ok, want)
					}
				}
			}
		})
	}
}

func TestDigestShowsAMissedChange(t *testing.T) {
	ix := New(Options{})
	ix.Load(ix.Root(), []record.KV{{Key: "/skydns/test/a", Value: []byte(`{"host":"10.0.0.1"}`), Revision: 2}})
	var etcd Digest
	etcd.Add("/skydns/test/a", 3) // updated at 3, an event the index never saw
	if got, _ := ix.Digest(ix.Root()); got == etcd {
		t.Fatalf("digest %+v does not tell a missed update from the truth", got)
	}
}
