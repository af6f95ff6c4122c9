package publish

import (
	"errors"
	"testing"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/seriescheck"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// everySeries makes every series of the owner published by a server block, those exported at
// zero and those made by what happens.
func everySeries(server, owner string) {
	c := NewConfig()
	c.Owner, c.Stanza.Server = owner, server
	c.seriesAtZero()
	writerWatchStreams.WithLabelValues(server, owner).Inc()
	m := &metrics{server: server, owner: owner, desired: source.NewDesired()}
	m.KindServed("HTTPRoute", "", true)
	m.Rejected("HTTPRoute", source.CauseConflict)
	m.Rejecting("HTTPRoute", source.CauseConflict, 1)
	m.Leading(true)
	m.Committed(1, 1)
	m.Conflict(plan.Conflict{})
	m.Skipped(plan.Skip{Reason: plan.ReasonPolicy})
	m.Failed("web.example.org", errors.New("boom"))
	m.Planned(plan.Change{})
	m.Adopted(1)
	m.Problems(1, 1)
	m.Synced(time.Now())
	m.Propagated("web.example.org", time.Millisecond)
	m.EtcdReachable(true)
}

// Every series of the publish role carries the server label, and forgetting an owner's series
// of a block forgets all of them and nothing of another block's: forgetSeries names every
// metric.
func TestEverySeriesIsLabelledAndForgottenByServer(t *testing.T) {
	seriescheck.ForgottenByServer(t, "owner",
		func(server string) { everySeries(server, "forget") },
		func(server string) { forgetSeries(server, "forget") })
}

// A publisher's reload key is the stanza's words, its server block's address and the files
// behind it: the same stanza shares, another address or another word does not.
func TestKeyIsTheStanzaAndItsServer(t *testing.T) {
	key := func(server string, options ...string) string {
		c := NewConfig()
		c.Owner = "eu1"
		c.Stanza = Stanza{Server: server, Zones: []string{"openmcp.cluster."}, Options: options}
		return c.Key()
	}
	a := key("dns://:1053", `["owner" "eu1"]`)
	if a != key("dns://:1053", `["owner" "eu1"]`) {
		t.Error("the same stanza in the same server block has another key")
	}
	if a == key("dns://:1054", `["owner" "eu1"]`) {
		t.Error("a server block on another port has the same key: the series would mix")
	}
	if a == key("dns://:1053", `["owner" "eu1"]`, `["dry-run"]`) {
		t.Error("a changed stanza has the same key")
	}
}
