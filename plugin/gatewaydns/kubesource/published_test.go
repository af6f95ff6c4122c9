package kubesource

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	dnsrecord "github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

var (
	pubWeb  = dnsrecord.ObjectRef{Kind: "HTTPRoute", Namespace: "shop", Name: "web"}
	pubAPI  = dnsrecord.ObjectRef{Kind: "HTTPRoute", Namespace: "shop", Name: "api"}
	pubRecs = dnsrecord.ObjectRef{Kind: "DNSEndpoint", Namespace: "dns", Name: "records"}
)

// pubStep is one Publication, the objects each name is published for at the time, and the
// announcements it must make, as "kind/ns/name: a,b @rev" ("-" for none, "was a,b" for a
// withdrawal).
type pubStep struct {
	pub     Publication
	sources map[string][]dnsrecord.ObjectRef
	want    []string
}

func held(name string, rev int64) PublishedName {
	return PublishedName{Name: name, Held: true, Revision: rev}
}
func committed(name string, rev int64) PublishedName {
	return PublishedName{Name: name, Held: true, Revision: rev, Committed: true}
}
func withdrawn(name string, rev int64) PublishedName {
	return PublishedName{Name: name, Revision: rev, Committed: true}
}

func announced(as []announcement) []string {
	var out []string
	for _, a := range as {
		if len(a.Names) == 0 {
			out = append(out, fmt.Sprintf("%s: was %s @%d", a.Object, strings.Join(a.Was, ","), a.Revision))
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s @%d", a.Object, strings.Join(a.Names, ","), a.Revision))
	}
	return out
}

// TestPublicationsTellEachChangeOnce pins what is news: a commit, or an object joining or
// leaving a name while the term leads; not what a term finds when it starts (a restart, a
// replica taking over), not a resync that changes nothing, not a name read for the first time.
func TestPublicationsTellEachChangeOnce(t *testing.T) {
	web := map[string][]dnsrecord.ObjectRef{"web.example": {pubWeb}}
	both := map[string][]dnsrecord.ObjectRef{"web.example": {pubAPI, pubWeb}}
	for _, tc := range []struct {
		name  string
		steps []pubStep
	}{
		{"a commit is news, the resync after it is not", []pubStep{
			{Publication{Term: 1, Names: []PublishedName{committed("web.example", 10)}}, web, []string{"HTTPRoute/shop/web: web.example @10"}},
			{Publication{Term: 1, Settled: true, Names: []PublishedName{held("web.example", 10)}}, web, nil},
			{Publication{Term: 1, Settled: true, Names: []PublishedName{held("web.example", 10)}}, web, nil},
		}},
		{"what a term starts from is not news, in this replica or the next", []pubStep{
			{Publication{Term: 7, Names: []PublishedName{held("web.example", 10)}}, nil, nil}, // before the sources synced
			{Publication{Term: 7, Names: []PublishedName{held("web.example", 10)}}, web, nil},
			{Publication{Term: 7, Settled: true, Names: []PublishedName{held("web.example", 10)}}, web, nil},
			{Publication{Term: 9, Settled: true, Names: []PublishedName{held("web.example", 10)}}, web, nil},
		}},
		{"a commit while the term starts is news", []pubStep{
			{Publication{Term: 7, Names: []PublishedName{held("web.example", 10)}}, web, nil},
			{Publication{Term: 7, Names: []PublishedName{committed("api.example", 12)}},
				map[string][]dnsrecord.ObjectRef{"api.example": {pubWeb}}, []string{"HTTPRoute/shop/web: api.example,web.example @12"}},
		}},
		{"an object that joins a published name is news, without a commit", []pubStep{
			{Publication{Term: 1, Settled: true, Names: []PublishedName{held("web.example", 10)}}, web, nil},
			{Publication{Term: 1, Names: []PublishedName{held("web.example", 10)}}, both, []string{"HTTPRoute/shop/api: web.example @10"}},
		}},
		{"an object that joins a name while the term starts is not news", []pubStep{
			{Publication{Term: 1, Names: []PublishedName{held("web.example", 10)}}, web, nil},
			{Publication{Term: 1, Names: []PublishedName{held("web.example", 10)}}, both, nil},
		}},
		{"an object that leaves a name is news, the name stays for the others", []pubStep{
			{Publication{Term: 1, Settled: true, Names: []PublishedName{held("web.example", 10)}}, both, nil},
			{Publication{Term: 1, Names: []PublishedName{held("web.example", 10)}}, web, []string{"HTTPRoute/shop/api: was web.example @0"}},
		}},
		{"a name read for the first time after the start is taken as found", []pubStep{
			{Publication{Term: 1, Settled: true, Names: []PublishedName{{Name: "web.example", Failed: "permission denied"}}}, web, nil},
			{Publication{Term: 1, Names: []PublishedName{held("web.example", 10)}}, web, nil},
			{Publication{Term: 1, Names: []PublishedName{committed("web.example", 15)}}, web, []string{"HTTPRoute/shop/web: web.example @15"}},
		}},
		{"a failure changes nothing published", []pubStep{
			{Publication{Term: 1, Settled: true, Names: []PublishedName{held("web.example", 10)}}, web, nil},
			{Publication{Term: 1, Names: []PublishedName{{Name: "web.example", Failed: "etcd unreachable"}}}, nil, nil},
			{Publication{Term: 1, Names: []PublishedName{held("web.example", 10)}}, web, nil},
		}},
		{"new records under the same names are news at their revision", []pubStep{
			{Publication{Term: 1, Settled: true, Names: []PublishedName{held("web.example", 10), held("api.example", 11)}},
				map[string][]dnsrecord.ObjectRef{"web.example": {pubWeb}, "api.example": {pubWeb}}, nil},
			{Publication{Term: 1, Names: []PublishedName{committed("web.example", 20)}}, web, []string{"HTTPRoute/shop/web: api.example,web.example @20"}},
			{Publication{Term: 1, Names: []PublishedName{held("web.example", 18)}}, web, nil}, // a resync finds an older key: nothing changed
		}},
		{"a name withdrawn of two says the withdrawal's revision", []pubStep{
			{Publication{Term: 1, Settled: true, Names: []PublishedName{held("web.example", 10), held("api.example", 11)}},
				map[string][]dnsrecord.ObjectRef{"web.example": {pubWeb}, "api.example": {pubWeb}}, nil},
			{Publication{Term: 1, Names: []PublishedName{withdrawn("api.example", 30)}}, nil, []string{"HTTPRoute/shop/web: web.example @30"}},
			{Publication{Term: 1, Names: []PublishedName{withdrawn("web.example", 31)}}, nil, []string{"HTTPRoute/shop/web: was web.example @31"}},
		}},
		{"a report of a term that ended is not news", []pubStep{
			{Publication{Term: 5, Settled: true, Names: []PublishedName{held("web.example", 10)}}, web, nil},
			{Publication{Term: 4, Names: []PublishedName{committed("web.example", 3)}}, web, nil},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p publications
			for i, s := range tc.steps {
				news, _ := p.apply(s.pub, func(n string) []dnsrecord.ObjectRef { return s.sources[n] })
				if got := announced(news); !slices.Equal(got, s.want) {
					t.Fatalf("step %d: announced %q, want %q", i, got, s.want)
				}
			}
		})
	}
}

// TestPublicationsNameTheDNSEndpointsOfTheNamesReported: a report has the status of every
// DNSEndpoint behind its names looked at again, those it was published for before included,
// and no other kind.
func TestPublicationsNameTheDNSEndpointsOfTheNamesReported(t *testing.T) {
	var p publications
	src := map[string][]dnsrecord.ObjectRef{"a.example": {pubRecs, pubWeb}}
	_, eps := p.apply(Publication{Term: 1, Settled: true, Names: []PublishedName{held("a.example", 3)}}, func(n string) []dnsrecord.ObjectRef { return src[n] })
	if !slices.Equal(eps, []dnsrecord.ObjectRef{pubRecs}) {
		t.Fatalf("DNSEndpoints of a name published: %v, want %v", eps, pubRecs)
	}
	_, eps = p.apply(Publication{Term: 1, Names: []PublishedName{withdrawn("a.example", 4)}}, func(string) []dnsrecord.ObjectRef { return nil })
	if !slices.Equal(eps, []dnsrecord.ObjectRef{pubRecs}) {
		t.Fatalf("DNSEndpoints of a name withdrawn: %v, want %v", eps, pubRecs)
	}
	if r, ok := p.name("a.example"); ok {
		t.Fatalf("a name neither held nor asked for is remembered: %+v", r)
	}
}

func TestAnnouncementMessages(t *testing.T) {
	many := make([]string, 12)
	for i := range many {
		many[i] = fmt.Sprintf("n%02d.example", i)
	}
	for _, tc := range []struct {
		a    announcement
		want string
	}{
		{announcement{Names: []string{"a.example", "b.example"}, Revision: 57}, "Published in etcd at revision 57: a.example, b.example"},
		{announcement{Was: []string{"a.example"}, Revision: 60}, "Withdrawn from etcd at revision 60: a.example"},
		{announcement{Was: []string{"a.example"}}, "No longer published: a.example"},
		{announcement{Names: many, Revision: 9}, "Published in etcd at revision 9: " + strings.Join(many[:10], ", ") + " and 2 more"},
	} {
		if got := announcementMessage(tc.a); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.a, got, tc.want)
		}
	}
}
