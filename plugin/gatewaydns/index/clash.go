package index

import (
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Names whose records mix a CNAME with other data are answered by the CNAME rule (cname.go);
// the index also tells Options.Clash when one starts or stops, so that keys written by hand or
// by another tool, which no writer reports, are seen: a log line and a gauge. Only the records
// one level below a name (the layout writers use) are looked at; a clash that only a subtree
// read sees is ruled all the same, without a report.

// clashes reports whether the name's own records mix a CNAME with addresses, or hold CNAMEs
// to different targets: what A questions see. A CNAME beside text (external-dns's registry
// records of its older format) is ruled for TXT questions but not counted, as too common to
// alert on. Its own records are the keys directly below it whose last label is a record id
// (record.IsRecordID); a key such as eu1/web written by hand is the name web.eu1 of its own, and two
// such names of different kinds are no clash of eu1's, though an A question at eu1 sees both.
func (t *tree) clashes(id nodeID) bool {
	cname, address := "", false
	for label, c := range t.children(id) {
		v := t.at(c).value
		if v == nil || !record.IsRecordID(label) {
			continue
		}
		switch v.kind {
		case record.Address:
			address = true
		case record.CNAME:
			target := strings.ToLower(dns.Fqdn(v.host))
			if cname != "" && target != cname {
				return true
			}
			cname = target
		}
		if address && cname != "" {
			return true
		}
	}
	return false
}

// checkClashLocked looks again at the name whose key has the path elements elems, path being
// them joined with "/".
func (ix *Index) checkClashLocked(elems []string, path string) {
	id, depth := ix.tree.walk(ix.tree.root, elems)
	clash := depth == len(elems) && ix.tree.clashes(id)
	ix.setClashLocked(elems, path, clash)
}

func (ix *Index) setClashLocked(elems []string, path string, clash bool) {
	if ix.clashes[path] == clash {
		return
	}
	if clash {
		ix.clashes[path] = true
	} else {
		delete(ix.clashes, path)
	}
	if ix.opts.Clash != nil {
		ix.opts.Clash(domainOf(elems), clash, len(ix.clashes))
	}
}

// clashName is a name whose records clash, by its path elements and their join with "/".
type clashName struct {
	elems []string
	path  string
}

// clashesIn is the names at or below sub, a subtree to be grafted at the path elements base,
// whose records clash.
func (t *tree) clashesIn(sub nodeID, base []string) []clashName {
	var found []clashName
	var visit func(id nodeID, elems []string)
	visit = func(id nodeID, elems []string) {
		if t.clashes(id) {
			kept := make([]string, len(elems))
			for i, el := range elems {
				kept[i] = strings.Clone(el) // labels refer into the tree
			}
			found = append(found, clashName{kept, strings.Join(kept, "/")})
		}
		for name, c := range t.children(id) {
			if !t.at(c).leaf() { // a leaf has no records below it to clash
				visit(c, append(elems, name))
			}
		}
	}
	visit(sub, slices.Clone(base))
	return found
}

// setClashesBelowLocked looks again at every name at or below the path elements base, after a
// load grafted a subtree there in which the names found clash.
func (ix *Index) setClashesBelowLocked(base []string, found []clashName) {
	prefix := strings.Join(base, "/")
	for path := range ix.clashes {
		if path == prefix || strings.HasPrefix(path, prefix+"/") || prefix == "" {
			ix.checkClashLocked(strings.Split(path, "/"), path)
		}
	}
	for _, c := range found {
		ix.setClashLocked(c.elems, c.path, true)
	}
}

// domainOf is the DNS name of a key's path elements below the root.
func domainOf(elems []string) string {
	labels := slices.Clone(elems)
	slices.Reverse(labels)
	return dns.Fqdn(strings.Join(labels, "."))
}
