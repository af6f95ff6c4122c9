package xfr

import (
	"testing"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/catalog"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// stanza says what the tests' stanza holds beyond its records: its zones (zone.test. when
// none), its options, whether it answers with exact names, its apex (the stock one when nil),
// and etcd's history (none when nil).
type stanza struct {
	zones   []string
	cfg     Config
	exact   bool
	apex    *answer.Apex
	history History
	catalog *catalog.Zone
}

// served is the transfers of a stanza's zones over one index, as the plugin hands them over
// once the index has loaded.
type served struct {
	*Transfers
	ix     *index.Index
	prefix string // the key prefix the index watches: the first zone's
}

// indexRecords are an index that answers every zone, and etcd's history: what a stanza
// answers from once its own feed has loaded.
type indexRecords struct {
	*index.Index
	history History
}

func (indexRecords) Serves(string) bool { return true }
func (r indexRecords) History() History { return r.history }

// loaded is the transfers of st's zones over an index loaded with kvs; the first zone holds the
// others.
func loaded(t testing.TB, st stanza, kvs []record.KV) *served {
	t.Helper()
	if len(st.zones) == 0 {
		st.zones = []string{"zone.test."}
	}
	if st.apex == nil {
		st.apex = answer.NewApex()
	}
	zonePrefixes := record.ZoneDirs(record.DefaultPrefix, st.zones)
	ix := index.New(index.Options{Prefixes: zonePrefixes[:1], ZonePrefixes: zonePrefixes, ExactNames: st.exact})
	ix.Load(zonePrefixes[0], kvs)
	records := indexRecords{ix, st.history}
	s := &served{ix: ix, prefix: zonePrefixes[0]}
	s.Transfers = New(Stanza{Server: "dns://:53", Zones: st.zones, Apex: st.apex, NegativeTTL: index.DefaultNegativeTTL, Catalog: st.catalog,
		Records: func() Records { return records }}, st.cfg)
	return s
}
