// Package xfr sends a gatewaydns stanza's zones to its secondaries: AXFR and IXFR through the
// stock transfer plugin (the plugin root's Transfer hands each request to Transfers, as
// CoreDNS's file and etcd plugins hand theirs to their zones), and the NOTIFYs that tell the
// secondaries of a change. A transfer reads a copy of the zone at one serial (index.Zone) and,
// for an IXFR, the names changed since the secondary's serial (index.Index.ZoneDiff); each
// name's records are made by the rules of an answer (package answer), so that a secondary
// holds what the primary answers. Transfers give way to queries (pace.go), are bounded in
// number and in how long they wait for a secondary (runs.go), and end when their stanza stops.
package xfr

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/coredns/coredns/plugin/transfer"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/answer"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/catalog"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/index"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// pluginName is the plugin the logs and metrics are the plugin's.
const pluginName = "gatewaydns"

var log = clog.NewWithPlugin(pluginName)

// Records are the records a stanza answers from now, as its transfers and NOTIFYs read them:
// the index of its feed (index.Index), or a bridge's until that has loaded. A reload's
// hand-over may change them, so they are asked for anew (Stanza.Records) rather than held.
type Records interface {
	// Loaded tells whether a full load is in memory.
	Loaded() bool
	// Serves tells whether zone is answered from these records: a bridge answers only the
	// zones it shares with the stanza.
	Serves(zone string) bool
	// ZoneSerial is the zone's serial: the etcd revision of its last change, with the offset
	// of a zone whose names' answers follow health checks (index/steerserial.go).
	ZoneSerial(zone string) uint32
	// MinTTL is the SOA's minimum (negative-ttl).
	MinTTL(request.Request) uint32
	// Zone is a copy of the zone at one serial, taken in chunks with pause called between them.
	Zone(zone string, pause func()) (*index.Zone, bool)
	// ZoneDiff is the zone's names that changed since serial, as they were then and as they
	// are now; ok is false where the journal does not reach back that far.
	ZoneDiff(zone string, serial uint32, apexNames []string) (past, now *index.Zone, ok bool)
	// JournalGap is the span of etcd's history between serial and the journal's start, where
	// the journal does not reach back to serial; ZoneDiffFrom is ZoneDiff from serial with the
	// values read from that span (index/gap.go).
	JournalGap(zone string, serial uint32) (index.Gap, bool)
	ZoneDiffFrom(zone string, serial uint32, apexNames []string, gap index.Gap, then map[string]*record.KV) (past, now *index.Zone, ok bool)
	// History reads etcd's history (package history); nil where there is none to read.
	History() History
}

// History reads the values that the keys under dir changed after revision from, up to to, had
// at from (nil: none), as history.Reader.Past does.
type History interface {
	Past(ctx context.Context, dir string, from, to int64) (map[string]*record.KV, error)
}

// Stanza is what the transfers take from the stanza whose zones they send.
type Stanza struct {
	Server      string // the server block's address: the metrics' server label
	Zones       []string
	Apex        *answer.Apex
	NegativeTTL uint32         // the SOA's minimum, in the SOA a NOTIFY carries
	Options     plugin.Options // the lookups' options (no_apex_fallback)
	Catalog     *catalog.Zone  // the catalog of Zones (catalog.go); nil: none
	// Records returns what the stanza answers from now; nil when there is nothing (the
	// stanza only publishes).
	Records func() Records
}

// Transfers are the zone transfers and the NOTIFYs of one stanza, from its CoreDNS instance's
// startup to its stop.
type Transfers struct {
	st    Stanza
	cfg   Config
	zones string // the metrics' zones label
	runs  *runs

	mu     sync.Mutex
	notify *notifier // nil until StartNotifying, and after Stop
}

// New prepares the transfers of st's zones; nothing runs until a transfer is asked for or
// StartNotifying is called.
func New(st Stanza, cfg Config) *Transfers {
	return &Transfers{st: st, cfg: cfg, zones: strings.Join(st.Zones, " "), runs: newRuns()}
}

// Transfer implements transfer.Transferer for the stanza's zones from its records: a copy of
// the zone's names at one revision (index.Index.Zone), turned into records while the transfer
// is sent, paced so that queries go first (pacer), by a goroutine the stanza owns (runs). An
// IXFR is answered with the SOA alone when the secondary is current, with the difference since
// its serial where the index's journal holds every change since (ixfr.go), and with the whole
// zone otherwise, as RFC 1995 allows.
func (t *Transfers) Transfer(zone string, serial uint32) (<-chan []dns.RR, error) {
	if t.isCatalog(zone) {
		return t.transferCatalog(serial)
	}
	b := t.records()
	if b == nil || !slices.Contains(t.st.Zones, zone) {
		return nil, transfer.ErrNotAuthoritative
	}
	if !b.Serves(zone) {
		return nil, index.ErrNotLoaded
	}
	run, err := t.runs.begin()
	if err != nil {
		if errors.Is(err, errTransferBusy) {
			transfers.WithLabelValues(t.st.Server, t.zones, "busy").Inc()
		}
		return nil, err
	}
	if !b.Loaded() {
		run.end()
		return nil, index.ErrNotLoaded
	}
	if serial != 0 {
		if ch, ok := t.fromSerial(run, b, zone, serial); ok {
			return ch, nil
		}
	}
	pace := &pacer{worked: time.Now(), stopped: run.runs.ctx.Done()}
	z, ok := b.Zone(zone, pace.pause)
	if !ok {
		run.end()
		return nil, index.ErrNotLoaded
	}
	transfers.WithLabelValues(t.st.Server, t.zones, "full").Inc()
	return run.run(func(x *xfrRun) { t.sendFull(x, z, pace) }), nil
}

// fromSerial answers an IXFR from serial with the SOA alone for a current secondary, and with
// the difference where the journal holds it; ok is false when the whole zone is due.
func (t *Transfers) fromSerial(run *xfrRun, b Records, zone string, serial uint32) (<-chan []dns.RR, bool) {
	if current := b.ZoneSerial(zone); !index.SerialAfter(current, serial) {
		transfers.WithLabelValues(t.st.Server, t.zones, "current").Inc()
		soa := t.st.Apex.SOAAt(zone, current, b.MinTTL(request.Request{}))
		return run.run(func(x *xfrRun) { x.send([]dns.RR{soa}) }), true
	}
	past, now, kind := t.incremental(run.runs.ctx, b, zone, serial)
	if kind == "" {
		return nil, false
	}
	transfers.WithLabelValues(t.st.Server, t.zones, kind).Inc()
	return run.run(func(x *xfrRun) { t.sendIncremental(x, zone, serial, past, now) }), true
}

// records is what the stanza answers from now, nil for nothing.
func (t *Transfers) records() Records {
	if t.st.Records == nil {
		return nil
	}
	return t.st.Records()
}

// sendFull sends the whole zone z, between two SOAs.
func (t *Transfers) sendFull(x *xfrRun, z *index.Zone, pace *pacer) {
	soa := []dns.RR{t.st.Apex.SOA(z, z.Origin, request.Request{})}
	if !x.send(soa) {
		return
	}
	w := newZoneWriter(z, t.st.Apex, dns.IsSubDomain("arpa.", z.Origin), t.cfg.Synthetic, t.st.Options)
	batch := make([]dns.RR, 0, xfrBatch)
	for i := range z.Len() {
		batch = w.appendName(batch, i)
		if len(batch) < xfrBatch {
			continue
		}
		if !x.send(batch) {
			return
		}
		batch = make([]dns.RR, 0, xfrBatch)
		pace.pause()
	}
	if len(batch) > 0 && !x.send(batch) {
		return
	}
	x.send(soa)
}

// StartNotifying starts sending NOTIFYs of the stanza's zones (notify.go) to their secondaries
// (secondaries.go), signed with a key of secrets (the server block's tsig plugin: name ->
// secret). Stop ends it. The error names a notify-key that secrets lack.
func (t *Transfers) StartNotifying(secrets map[string]string) error {
	keyName, key, _, err := t.cfg.SigningKey(secrets)
	if err != nil {
		return err
	}
	n := startNotifier(t, keyName, key)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.notify = n
	return nil
}

// Stop ends the NOTIFYs and the transfers being sent, each wait bounded by
// handover.StopWait; no transfer starts afterwards.
func (t *Transfers) Stop() {
	t.mu.Lock()
	n := t.notify
	t.notify = nil
	t.mu.Unlock()
	n.stop()
	t.runs.stop()
}
