// Package benchdata is the zone that the benchmarks ask questions of: the records make bench
// writes into etcd, and the questions it sends with dnsperf. The plugin's in-process
// benchmarks load the same records and ask the same questions, so that a change can be judged
// without the network's noise before make bench judges it with it.
package benchdata

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Zone is the zone every server of the benchmarks answers; the generated names are under
// bench.openmcp.cluster.
const Zone = "openmcp.cluster"

// KV is one etcd key and its value.
type KV struct{ Key, Value string }

// Query is one question: a name and a type as dnsperf spells it ("A", "SRV", ...).
type Query struct{ Name, Type string }

// Dataset is n SkyDNS records in the layout external-dns and gatewaydns write (each record one
// level below its name's key), and the names to ask for:
//
//	70% A names       hN.bench.openmcp.cluster          -> 10.x.y.z
//	10% AAAA names    vN.bench.openmcp.cluster          -> fd00::N
//	 5% CNAME chains  cN.bench.openmcp.cluster          -> hM.bench.openmcp.cluster (in zone) -> A
//	 5% SRV           _http._tcp.sN.bench.openmcp.cluster -> hM.bench.openmcp.cluster:8080
//	10% subtrees      tN.bench.openmcp.cluster, 4 records under child keys k0..k3 (4 A answers)
//
// NXDOMAIN names (xN.bench.openmcp.cluster) have no record.
type Dataset struct {
	Records                          []KV
	A, AAAA, CNAME, SRV, Subtree, NX []string
	Hosts                            []string // "IP name" lines of the A and AAAA names, for the hosts plugin
}

// New is a dataset of n records with the keys under /prefix (gatewaydns's `path /prefix`;
// record.DefaultPrefix is the stock one), so that datasets of several sizes can sit in one
// etcd side by side.
func New(prefix string, n int) *Dataset {
	d := &Dataset{}
	nSub := n / 40 // 4 keys each
	nSRV, nCNAME, nAAAA := n/20, n/20, n/10
	nA := max(n-4*nSub-nSRV-nCNAME-nAAAA, 1)
	put := func(name, target, value string) {
		d.Records = append(d.Records, KV{record.Key(prefix, name, "bench", target), value})
	}
	for i := range nA {
		name, ip := fmt.Sprintf("h%d.bench.%s", i, Zone), IPv4(i)
		put(name, ip, fmt.Sprintf(`{"host":%q,"ttl":300}`, ip))
		d.A = append(d.A, name)
		d.Hosts = append(d.Hosts, ip+" "+name)
	}
	for i := range nAAAA {
		name, ip := fmt.Sprintf("v%d.bench.%s", i, Zone), IPv6(i)
		put(name, ip, fmt.Sprintf(`{"host":%q,"ttl":300}`, ip))
		d.AAAA = append(d.AAAA, name)
		d.Hosts = append(d.Hosts, ip+" "+name)
	}
	for i := range nCNAME {
		name, target := fmt.Sprintf("c%d.bench.%s", i, Zone), d.A[(i*7)%nA]
		put(name, target, fmt.Sprintf(`{"host":%q,"ttl":300}`, target))
		d.CNAME = append(d.CNAME, name)
	}
	for i := range nSRV {
		name, target := fmt.Sprintf("_http._tcp.s%d.bench.%s", i, Zone), d.A[(i*13)%nA]
		put(name, target, fmt.Sprintf(`{"host":%q,"port":8080,"priority":10,"weight":100,"ttl":300}`, target))
		d.SRV = append(d.SRV, name)
	}
	for i := range nSub {
		name := fmt.Sprintf("t%d.bench.%s", i, Zone)
		for k := range 4 {
			ip := IPv4(nA + 4*i + k)
			d.Records = append(d.Records, KV{record.NamePath(prefix, name) + fmt.Sprintf("/k%d", k),
				fmt.Sprintf(`{"host":%q,"ttl":300}`, ip)})
		}
		d.Subtree = append(d.Subtree, name)
	}
	for i := range max(n/10, 100) {
		d.NX = append(d.NX, fmt.Sprintf("x%d.bench.%s", i, Zone))
	}
	return d
}

// IPv4 is the i-th address of 10.0.0.0/8, skipping .0 and .255.
func IPv4(i int) string {
	return fmt.Sprintf("10.%d.%d.%d", (i/254/256)%256, (i/254)%256, i%254+1)
}

// MixPart is a share of a query mix.
type MixPart struct {
	What   string // a, aaaa, nx, cname, srv, subtree
	Weight int
}

// Mix is a named query mix.
type Mix struct {
	Name  string
	Parts []MixPart
}

var (
	// MixBasic is what all four backends of make bench, hosts included, can answer alike.
	MixBasic = Mix{"A/AAAA/NXDOMAIN", []MixPart{{"a", 60}, {"aaaa", 20}, {"nx", 20}}}
	// MixFull adds what hosts cannot express.
	MixFull = Mix{"full", []MixPart{{"a", 35}, {"aaaa", 10}, {"nx", 10}, {"cname", 15}, {"srv", 10}, {"subtree", 20}}}
)

func (m Mix) String() string {
	var parts []string
	for _, p := range m.Parts {
		parts = append(parts, fmt.Sprintf("%d%% %s", p.Weight, p.What))
	}
	return strings.Join(parts, ", ")
}

// Queries draws n questions from the dataset with the mix's weights, deterministically.
func (d *Dataset) Queries(m Mix, n int) []Query {
	r := rand.New(rand.NewPCG(42, uint64(len(d.Records))))
	total := 0
	for _, p := range m.Parts {
		total += p.Weight
	}
	out := make([]Query, 0, n)
	for len(out) < n {
		x := r.IntN(total)
		for _, p := range m.Parts {
			if x >= p.Weight {
				x -= p.Weight
				continue
			}
			names, qtype := d.Names(p.What)
			if len(names) > 0 {
				out = append(out, Query{names[r.IntN(len(names))], qtype})
			}
			break
		}
	}
	return out
}

// Names is the names of a part of a mix, and the type they are asked for.
func (d *Dataset) Names(what string) ([]string, string) {
	switch what {
	case "a":
		return d.A, "A"
	case "aaaa":
		return d.AAAA, "AAAA"
	case "nx":
		return d.NX, "A"
	case "cname":
		return d.CNAME, "A"
	case "srv":
		return d.SRV, "SRV"
	case "subtree":
		return d.Subtree, "A"
	}
	panic("unknown mix part " + what)
}

// IPv6 is the i-th name's AAAA address, fd00::i+1 in the canonical text form: the last 32 bits
// count, so that names past the 65,535th get valid addresses too.
func IPv6(i int) string {
	var b [16]byte
	b[0], b[1] = 0xfd, 0x00
	binary.BigEndian.PutUint32(b[12:], uint32(i+1)) // #nosec G115 -- a data set holds fewer than 2^32 names
	return netip.AddrFrom16(b).String()
}

// SteeredName is the name i of Steered's.
func SteeredName(i int) string { return fmt.Sprintf("n%d.t.%s", i, Zone) }

// Steered is bench phase T's records: n names under prefix, each of two owners (eu1, us1) with
// two addresses, their values carrying the owners' steering objects ("" for none).
func Steered(prefix string, n int, eu, us string) []KV {
	out := make([]KV, 0, 4*n)
	for i := range n {
		name := SteeredName(i)
		for o, owner := range []struct{ id, steering string }{{"eu1", eu}, {"us1", us}} {
			for a := range 2 {
				host := fmt.Sprintf("10.%d.%d.%d", 100+2*o+a, i/256%256, i%256)
				v := fmt.Sprintf(`{"host":%q,"owner":%q`, host, owner.id)
				if owner.steering != "" {
					v += `,"steering":` + owner.steering
				}
				out = append(out, KV{Key: record.Key(prefix, name, owner.id, host), Value: v + "}"})
			}
		}
	}
	return out
}
