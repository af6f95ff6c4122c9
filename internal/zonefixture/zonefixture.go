// Package zonefixture is the zone that the plugin's tests of answers and of zone transfers
// share, as the etcd keys that say it.
package zonefixture

import (
	"testing"

	"github.com/coredns/coredns/plugin/transfer"
	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// Records hold every kind of data the zone zone.test. can say: the writer's layout (a name and
// its record-id children), records at a name's own key, an in-zone CNAME, a CNAME rule clash,
// SRV, MX, TXT, NS and apex records, a stored wildcard, and names below names. The last change
// is at revision 16.
var Records = []record.KV{
	At(2, "/skydns/test/zone/app/3e6bee2e", `{"host":"10.0.0.1","ttl":60,"targetstrip":1}`),
	At(3, "/skydns/test/zone/app/9a0c11f0", `{"host":"10.0.0.2","ttl":60,"targetstrip":1}`),
	At(4, "/skydns/test/zone/v6/1", `{"host":"2001:db8::1"}`),
	At(5, "/skydns/test/zone/own", `{"host":"10.0.0.3"}`),
	At(6, "/skydns/test/zone/alias/1", `{"host":"app.zone.test","targetstrip":1}`),
	At(7, "/skydns/test/zone/clash/1", `{"host":"10.0.0.4"}`),
	At(8, "/skydns/test/zone/clash/2", `{"host":"app.zone.test"}`),
	At(9, "/skydns/test/zone/txt/1", `{"text":"hello"}`),
	At(10, "/skydns/test/zone/mail/1", `{"host":"10.0.0.5","mail":true,"priority":20}`),
	At(11, "/skydns/test/zone/svc/tcp/_https/1", `{"host":"10.0.0.6","port":443}`),
	At(12, "/skydns/test/zone/dns/ns/ns1", `{"host":"10.0.0.53"}`),
	At(13, "/skydns/test/zone/dns/apex/1", `{"host":"10.0.0.80"}`),
	At(14, "/skydns/test/zone/apps/*/1", `{"host":"10.1.0.1"}`),
	At(15, "/skydns/test/zone/eu1/web/1", `{"host":"10.2.0.1"}`),
	At(16, "/skydns/test/zone/eu1/web/www/1", `{"host":"10.2.0.2"}`),
}

// At is key holding value, put (and created) at the revision rev.
func At(rev int64, key, value string) record.KV {
	return record.KV{Key: key, Value: []byte(value), Revision: rev, Created: rev}
}

// Transferred is the records of the transfer of zone that x sends from serial (0: AXFR), in the
// order sent.
func Transferred(t testing.TB, x transfer.Transferer, zone string, serial uint32) []dns.RR {
	t.Helper()
	ch, err := x.Transfer(zone, serial)
	if err != nil {
		t.Fatal(err)
	}
	var rrs []dns.RR
	for batch := range ch {
		rrs = append(rrs, batch...)
	}
	return rrs
}
