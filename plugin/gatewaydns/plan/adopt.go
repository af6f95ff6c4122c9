package plan

import (
	"net"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/txtregistry"
)

// registryKV is a key found at one of a name's registry names (txtregistry.Config.Names), with
// the record type that registry name stands for ("" for the old format).
type registryKV struct {
	KV
	Type string
}

// registryScope maps each registry name of the names in scope to the names and types it
// stands for.
func registryScope(reg *txtregistry.Config, names []string) map[string][]registryEntry {
	if reg == nil {
		return nil
	}
	out := make(map[string][]registryEntry, len(names)*len(txtregistry.Types))
	for _, n := range names {
		for _, e := range reg.Names(n) {
			out[e.Name] = append(out[e.Name], registryEntry{name: n, typ: e.Type})
		}
	}
	return out
}

type registryEntry struct {
	name string
	typ  string
}

// adoptable is what this writer takes over from external-dns at one name when Input.Registry
// is set: the keys that external-dns's TXT registry says its owner (Registry.Owner) holds, and
// the registry records saying so. They are planned as the writer's own keys: replaced by its
// deterministic keys and deleted in the same transaction, their claim on the name kept.
//
//   - A registry record is a text-only value at a registry name whose labels
//     (heritage=external-dns) name Registry.Owner: it registers the name's records of its type.
//   - A value at the name itself whose text is such labels is external-dns's old format: it
//     registers every type, and is itself external-dns's (with a host: a record whose text makes
//     a CNAME answer as TXT, external-dns #4953).
//   - A key without owner at the name is taken over when its type is registered; a key whose
//     owner field is Registry.Owner always (external-dns --coredns-strictly-owned wrote it).
//
// Keys of any other owner are never taken: only Registry.Owner's, or no owner's. registry are
// those of adopt that are registry records and nothing else (text only, no host): what a
// change that deletes only them says of itself (Change.Registry).
func adoptable(in Input, cur []KV, reg []registryKV) (adopt, registry map[string]bool) {
	if in.Registry == nil {
		return nil, nil
	}
	theirs := in.Registry.Owner
	// registers: v is a registry record of theirs, in a key that is theirs, nobody's or ours.
	registers := func(v record.Value) bool {
		if v.Text == "" || (v.Owner != "" && v.Owner != theirs && v.Owner != in.Owner) {
			return false
		}
		owner, ok := txtregistry.OwnerOf(v.Text)
		return ok && owner == theirs
	}
	registered := make(map[string]bool)
	adopt = make(map[string]bool)
	registry = make(map[string]bool)
	for _, r := range reg {
		if v, err := record.ParseValue(r.Value); err == nil && v.Host == "" && registers(v) {
			registered[r.Type] = true
			adopt[r.Key] = true
			registry[r.Key] = true
		}
	}
	// Each value of the name parsed once; a value that does not parse as a record still has
	// its owner field read, as record.OwnerOf reads it.
	values := make([]record.Value, len(cur))
	parsed := make([]bool, len(cur))
	for i, kv := range cur {
		v, err := record.ParseValue(kv.Value)
		if err != nil {
			values[i].Owner = record.OwnerOf(kv.Value)
			continue
		}
		values[i], parsed[i] = v, true
		// Not the writer's own keys: a text record it publishes is a record, whatever it says.
		if v.Owner != in.Owner && registers(v) {
			registered[""] = true
			adopt[kv.Key] = true
			registry[kv.Key] = v.Host == ""
		}
	}
	for i, kv := range cur {
		switch v := values[i]; {
		case v.Owner == in.Owner:
		case v.Owner == theirs:
			adopt[kv.Key] = true
		case v.Owner == "" && parsed[i]:
			for _, t := range registryTypes(v) {
				if registered[t] || registered[""] {
					adopt[kv.Key] = true
				}
			}
		}
	}
	return adopt, registry
}

// registryTypes are the registry types that can speak for a value external-dns wrote. Its
// coredns provider reads every IP host back as an A record and every other host as a CNAME,
// and wrote SRV and MX data as a host ("10 mail.example.com"), so an address is registered as
// A or AAAA, and a host name as CNAME, SRV or MX.
func registryTypes(v record.Value) []string {
	switch {
	case v.Host == "" && v.Text != "":
		return []string{"txt"}
	case v.Host == "":
		return nil
	case net.ParseIP(v.Host) != nil:
		return []string{"a", "aaaa"}
	}
	return []string{"cname", "srv", "mx"}
}
