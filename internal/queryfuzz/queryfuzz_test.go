package queryfuzz

import (
	"strings"
	"testing"

	"github.com/miekg/dns"
)

func TestQuestionIsWhatAServerIsAsked(t *testing.T) {
	for _, tc := range []struct {
		behaviour string
		name      string
		wantQName string // "" when nothing is asked
		wantZone  string
	}{
		{"a relative name is asked in the zone", "app", "app.zone.test.", Zone},
		{"the empty name is the apex", "", "zone.test.", Zone},
		{"a name ending in a dot is asked as it is", "1.0.0.10.in-addr.arpa.", "1.0.0.10.in-addr.arpa.", "in-addr.arpa."},
		{"the zone is matched whatever the case", "APP", "APP.zone.test.", Zone},
		{"a name outside the zones is not asked", "example.org.", "", ""},
		{"a label no message can carry is not asked", strings.Repeat("x", 64), "", ""},
		{"a name too long for a message is not asked", strings.Repeat("d.", 130), "", ""},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			q, zone := Input{Name: tc.name, QType: dns.TypeA}.Question()
			if tc.wantQName == "" {
				if q != nil || zone != "" {
					t.Fatalf("asked %v in %q, want nothing asked", q, zone)
				}
				return
			}
			if q == nil || q.Question[0].Name != tc.wantQName || q.Question[0].Qtype != dns.TypeA || zone != tc.wantZone {
				t.Fatalf("asked %v in %q, want %s A in %q", q, zone, tc.wantQName, tc.wantZone)
			}
		})
	}
}

func TestChangesDeleteTheLoadedKeyWhenTheWatchValueIsOdd(t *testing.T) {
	for _, tc := range []struct {
		v2          string
		wantDeleted bool
	}{{"", false}, {"x", true}, {"xy", false}} {
		c := Input{K1: "/k1", K2: "/k2", V2: []byte(tc.v2)}.Changes()
		if len(c) != 2 || c[0].Key != "/k2" || string(c[0].Value) != tc.v2 || c[1].Key != "/k1" || c[1].Deleted != tc.wantDeleted {
			t.Fatalf("V2 %q: changes %+v, want /k2 put, then /k1 deleted %v", tc.v2, c, tc.wantDeleted)
		}
	}
}
