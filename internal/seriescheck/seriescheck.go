// Package seriescheck holds checks of the gatewaydns metrics that tests of several packages
// share: each role's series are its own package's, forgotten by its own list.
package seriescheck

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Series returns the labels of every coredns_gatewaydns_ series exported now whose labels hold
// label (a role's: "zones" for the serve role, "owner" for the publish role), by metric.
func Series(t *testing.T, label string) map[string][]map[string]string {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]map[string]string{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "coredns_gatewaydns_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if _, ok := labels[label]; ok {
				out[mf.GetName()] = append(out[mf.GetName()], labels)
			}
		}
	}
	return out
}

// ForgottenByServer checks that every series of a role (those labelled with label) carries the
// server label, and that forgetting a server block's series forgets all of them and nothing of
// another block's: create makes every series of the role for a server, forget is the role's
// list of its metrics. A metric missing from that list fails it.
func ForgottenByServer(t *testing.T, label string, create, forget func(server string)) {
	t.Helper()
	const gone, kept = "dns://:10531", "dns://:10532"
	create(gone)
	create(kept)
	t.Cleanup(func() { forget(kept) })

	before := Series(t, label)
	if len(before) == 0 {
		t.Fatalf("no series labelled %s", label)
	}
	for name, series := range before {
		for _, labels := range series {
			if _, ok := labels["server"]; !ok {
				t.Errorf("%s%v has no server label", name, labels)
			}
		}
	}

	forget(gone)
	after := Series(t, label)
	for name := range before {
		var goneLeft, keptLeft int
		for _, labels := range after[name] {
			switch labels["server"] {
			case gone:
				goneLeft++
			case kept:
				keptLeft++
			}
		}
		if goneLeft > 0 {
			t.Errorf("%s: %d series of the forgotten server left", name, goneLeft)
		}
		if keptLeft == 0 {
			t.Errorf("%s: the other server's series were forgotten too", name)
		}
	}
}
