package plan

import (
	"slices"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// upToDate reports whether the value etcd holds needs no rewrite to become want (see
// record.Value.Current).
func upToDate(have, want []byte) bool {
	if string(have) == string(want) {
		return true
	}
	return compareValues(have, want, record.Value.Current)
}

// answersAlike reports whether have answers as want does, for the same owner: the two differ
// at most in the objects they list as the name's sources.
func answersAlike(have, want []byte) bool {
	return compareValues(have, want, func(vh, vw record.Value) bool {
		vh.Sources, vh.SourceCount = vw.Sources, vw.SourceCount
		return vh.Equal(vw)
	})
}

// compareValues parses have and want and compares them with same; a value that does not parse
// compares unequal.
func compareValues(have, want []byte, same func(have, want record.Value) bool) bool {
	vh, err := record.ParseValue(have)
	if err != nil {
		return false
	}
	vw, err := record.ParseValue(want)
	if err != nil {
		return false
	}
	return same(vh, vw)
}

func sameKeys(own map[string]KV, want map[string]Put) bool {
	if len(own) != len(want) {
		return false
	}
	for k := range want {
		if _, ok := own[k]; !ok {
			return false
		}
	}
	return true
}

func changedValues(own map[string]KV, want map[string]Put) bool {
	for k, put := range want {
		if kv, ok := own[k]; ok && !upToDate(kv.Value, put.Value) {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
