package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// zone is the zone every server of the benchmark answers; the generated names are under
// bench.openmcp.cluster.
const zone = "openmcp.cluster"

// kv is one etcd key and its value.
type kv struct{ key, value string }

// query is one line of a dnsperf data file: a name and a type.
type query struct{ name, qtype string }

// dataset is n SkyDNS records in the layout external-dns and gatewaydns write (each record one
// level below its name's key), and the names to ask for:
//
//	70% A names       hN.bench.openmcp.cluster          -> 10.x.y.z
//	10% AAAA names    vN.bench.openmcp.cluster          -> fd00::N
//	 5% CNAME chains  cN.bench.openmcp.cluster          -> hM.bench.openmcp.cluster (in zone) -> A
//	 5% SRV           _http._tcp.sN.bench.openmcp.cluster -> hM.bench.openmcp.cluster:8080
//	10% subtrees      tN.bench.openmcp.cluster, 4 records under child keys k0..k3 (4 A answers)
//
// NXDOMAIN names (xN.bench.openmcp.cluster) have no record.
type dataset struct {
	records                          []kv
	a, aaaa, cname, srv, subtree, nx []string
	hosts                            []string // "IP name" lines of the A and AAAA names, for the hosts plugin
}

func newDataset(n int) *dataset { return newDatasetAt(record.DefaultPrefix, n) }

// newDatasetAt is newDataset with the keys under /prefix instead of /skydns (gatewaydns's
// `path /prefix`), so that datasets of several sizes can sit in one etcd side by side.
func newDatasetAt(prefix string, n int) *dataset {
	d := &dataset{}
	nSub := n / 40 // 4 keys each
	nSRV, nCNAME, nAAAA := n/20, n/20, n/10
	nA := max(n-4*nSub-nSRV-nCNAME-nAAAA, 1)
	put := func(name, target, value string) {
		d.records = append(d.records, kv{record.Key(prefix, name, "bench", target), value})
	}
	for i := range nA {
		name, ip := fmt.Sprintf("h%d.bench.%s", i, zone), ipv4(i)
		put(name, ip, fmt.Sprintf(`{"host":%q,"ttl":300}`, ip))
		d.a = append(d.a, name)
		d.hosts = append(d.hosts, ip+" "+name)
	}
	for i := range nAAAA {
		name, ip := fmt.Sprintf("v%d.bench.%s", i, zone), fmt.Sprintf("fd00::%x", i+1)
		put(name, ip, fmt.Sprintf(`{"host":%q,"ttl":300}`, ip))
		d.aaaa = append(d.aaaa, name)
		d.hosts = append(d.hosts, ip+" "+name)
	}
	for i := range nCNAME {
		name, target := fmt.Sprintf("c%d.bench.%s", i, zone), d.a[(i*7)%nA]
		put(name, target, fmt.Sprintf(`{"host":%q,"ttl":300}`, target))
		d.cname = append(d.cname, name)
	}
	for i := range nSRV {
		name, target := fmt.Sprintf("_http._tcp.s%d.bench.%s", i, zone), d.a[(i*13)%nA]
		put(name, target, fmt.Sprintf(`{"host":%q,"port":8080,"priority":10,"weight":100,"ttl":300}`, target))
		d.srv = append(d.srv, name)
	}
	for i := range nSub {
		name := fmt.Sprintf("t%d.bench.%s", i, zone)
		for k := range 4 {
			ip := ipv4(nA + 4*i + k)
			d.records = append(d.records, kv{record.NamePath(prefix, name) + fmt.Sprintf("/k%d", k),
				fmt.Sprintf(`{"host":%q,"ttl":300}`, ip)})
		}
		d.subtree = append(d.subtree, name)
	}
	for i := range max(n/10, 100) {
		d.nx = append(d.nx, fmt.Sprintf("x%d.bench.%s", i, zone))
	}
	return d
}

// ipv4 is the i-th address of 10.0.0.0/8, skipping .0 and .255.
func ipv4(i int) string {
	return fmt.Sprintf("10.%d.%d.%d", (i/254/256)%256, (i/254)%256, i%254+1)
}

// mixPart is a share of a query mix.
type mixPart struct {
	what   string // a, aaaa, nx, cname, srv, subtree
	weight int
}

// mix is a named query mix.
type mix struct {
	name  string
	parts []mixPart
}

var (
	// mixBasic is what all four backends, hosts included, can answer alike.
	mixBasic = mix{"A/AAAA/NXDOMAIN", []mixPart{{"a", 60}, {"aaaa", 20}, {"nx", 20}}}
	// mixFull adds what hosts cannot express.
	mixFull = mix{"full", []mixPart{{"a", 35}, {"aaaa", 10}, {"nx", 10}, {"cname", 15}, {"srv", 10}, {"subtree", 20}}}
)

func (m mix) String() string {
	var parts []string
	for _, p := range m.parts {
		parts = append(parts, fmt.Sprintf("%d%% %s", p.weight, p.what))
	}
	return strings.Join(parts, ", ")
}

// queries draws n questions from the dataset with the mix's weights, deterministically.
func (d *dataset) queries(m mix, n int) []query {
	r := rand.New(rand.NewPCG(42, uint64(len(d.records))))
	total := 0
	for _, p := range m.parts {
		total += p.weight
	}
	out := make([]query, 0, n)
	for len(out) < n {
		x := r.IntN(total)
		for _, p := range m.parts {
			if x >= p.weight {
				x -= p.weight
				continue
			}
			names, qtype := d.names(p.what)
			if len(names) > 0 {
				out = append(out, query{names[r.IntN(len(names))], qtype})
			}
			break
		}
	}
	return out
}

func (d *dataset) names(what string) ([]string, string) {
	switch what {
	case "a":
		return d.a, "A"
	case "aaaa":
		return d.aaaa, "AAAA"
	case "nx":
		return d.nx, "A"
	case "cname":
		return d.cname, "A"
	case "srv":
		return d.srv, "SRV"
	case "subtree":
		return d.subtree, "A"
	}
	panic("unknown mix part " + what)
}

// dnsperfInput is a dnsperf data file: one "name type" per line.
func dnsperfInput(qs []query) string {
	var b strings.Builder
	for _, q := range qs {
		b.WriteString(q.name)
		b.WriteByte(' ')
		b.WriteString(q.qtype)
		b.WriteByte('\n')
	}
	return b.String()
}

// loadDataset writes a dataset of n records under /path into the bench etcd, after clearing
// what an earlier run left there, and returns it with the time the writes took.
func (h *harness) loadDataset(path string, n int) (*dataset, time.Duration, error) {
	d := newDatasetAt(path, n)
	ctx, cancel := h.ctx()
	defer cancel()
	if err := clearPrefix(ctx, h.cli, "/"+path+"/"); err != nil {
		return nil, 0, err
	}
	start := time.Now()
	if err := loadRecords(ctx, h.cli, d.records, 8); err != nil {
		return nil, 0, err
	}
	return d, time.Since(start), nil
}
