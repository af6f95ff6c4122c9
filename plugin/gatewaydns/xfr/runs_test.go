package xfr

import (
	"errors"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/zonefixture"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/handover"
)

// slotsFree waits up to a few seconds for every transfer of the process to have ended.
func slotsFree(t *testing.T) bool {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if len(xfrSlots) == 0 {
			return true
		}
	}
	return false
}

// startedTransfer asks for a transfer and takes its first message, the SOA: the producer is
// then blocked handing over the next one.
func startedTransfer(t *testing.T, g *served) <-chan []dns.RR {
	t.Helper()
	ch, err := g.Transfer("zone.test.", 0)
	if err != nil {
		t.Fatal(err)
	}
	if first := <-ch; len(first) != 1 || first[0].Header().Rrtype != dns.TypeSOA {
		t.Fatalf("first message %v, want the SOA", first)
	}
	return ch
}

// ended checks that a transfer's channel is closed without the rest of the zone: the
// producer gave up rather than waited.
func ended(t *testing.T, ch <-chan []dns.RR) {
	t.Helper()
	select {
	case rrs, ok := <-ch:
		if ok {
			t.Errorf("the transfer went on (%d records) after it should have ended", len(rrs))
		}
	case <-time.After(time.Second):
		t.Error("the transfer's channel is still open")
	}
}

func TestATransferNobodyReadsEndsAfterTheStallBound(t *testing.T) {
	g := loaded(t, stanza{}, zonefixture.Records)
	g.runs.stall = 50 * time.Millisecond
	ch := startedTransfer(t, g)
	if !slotsFree(t) {
		t.Fatal("a transfer that nobody reads still runs after its stall bound")
	}
	ended(t, ch)
}

func TestAStopEndsTheTransfersAndRefusesNewOnes(t *testing.T) {
	g := loaded(t, stanza{}, zonefixture.Records)
	ch := startedTransfer(t, g)
	start := time.Now()
	g.Stop()
	if took := time.Since(start); took > handover.StopWait {
		t.Errorf("stop took %s with a transfer blocked, want within %s", took, handover.StopWait)
	}
	if len(xfrSlots) != 0 {
		t.Error("a transfer still runs after its stanza stopped")
	}
	ended(t, ch)
	if _, err := g.Transfer("zone.test.", 0); !errors.Is(err, errTransferStopped) {
		t.Errorf("a transfer asked for after the stop: %v, want %v", err, errTransferStopped)
	}
}

func TestTransfersBeyondTheBoundAreRefusedUntilOneEnds(t *testing.T) {
	g := loaded(t, stanza{}, zonefixture.Records)
	for range xfrRunning {
		startedTransfer(t, g)
	}
	if _, err := g.Transfer("zone.test.", 0); !errors.Is(err, errTransferBusy) {
		t.Errorf("transfer %d: %v, want %v", xfrRunning+1, err, errTransferBusy)
	}
	// An IXFR of a current secondary holds a slot as well, for as short as it takes.
	if _, err := g.Transfer("zone.test.", 16); !errors.Is(err, errTransferBusy) {
		t.Errorf("an IXFR beyond the bound: %v, want %v", err, errTransferBusy)
	}
	g.runs.stop()
	if !slotsFree(t) {
		t.Fatal("the stopped transfers still hold their slots")
	}
	other := loaded(t, stanza{}, zonefixture.Records)
	if rrs := zonefixture.Transferred(t, other, "zone.test.", 0); len(rrs) < 3 {
		t.Errorf("a transfer after the others ended: %d records", len(rrs))
	}
}
