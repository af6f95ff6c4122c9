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
	vh, err := record.ParseValue(have)
	if err != nil {
		return false
	}
	vw, err := record.ParseValue(want)
	if err != nil {
		return false
	}
	return vh.Current(vw)
}

// answersAlike reports whether have answers as want does, for the same owner: the two differ
// at most in the objects they list as the name's sources.
func answersAlike(have, want []byte) bool {
	vh, err := record.ParseValue(have)
	if err != nil {
		return false
	}
	vw, err := record.ParseValue(want)
	if err != nil {
		return false
	}
	vh.Sources, vh.SourceCount = vw.Sources, vw.SourceCount
	return vh.Equal(vw)
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
