package main

import (
	"testing"

	"github.com/gatewaydns/gatewaydns/internal/dnscheck"
)

// The demo reads dig's AXFR output back as records: a whole zone passes the transfer check,
// and a refused transfer, which dig reports in a comment with exit status 0, fails it.
func TestDigTransferOutputIsChecked(t *testing.T) {
	const soa = "openmcp.cluster.\t30\tIN\tSOA\tns.dns.openmcp.cluster. hostmaster.openmcp.cluster. 14 7200 1800 86400 30\n"
	for _, tc := range []struct {
		behaviour, out string
		ok             bool
	}{
		{"a whole zone", soa + "web.eu1.openmcp.cluster. 60\tIN\tA\t203.0.113.10\n" + soa, true},
		{"a refused transfer", "; Transfer failed.\n", false},
		{"a transfer cut short", soa + "web.eu1.openmcp.cluster. 60\tIN\tA\t203.0.113.10\n;; communications error: end of file\n", false},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			rrs, err := parseRRs(tc.out)
			if err == nil {
				err = dnscheck.CompleteTransfer(zone, rrs)
			}
			if (err == nil) != tc.ok {
				t.Fatalf("got %v, want ok=%v", err, tc.ok)
			}
		})
	}
	if _, err := parseRRs("not a record\n"); err == nil {
		t.Error("a line that is not a record was read")
	}
}
