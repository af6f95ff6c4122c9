// What `up` prints once the landscape is ready: every name through every cluster's CoreDNS, where
// one answer comes from (explain), the refused name, and the whole zone by transfer. Each answer printed is checked too: the demo
// fails when one is not what the landscape published.

package main

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/gatewaydns/gatewaydns/internal/dnscheck"
)

// printAnswers prints the answers, with dig when it is installed (else with a Go DNS client),
// and returns what was wrong with them: a name without its address, a refused name answered, a
// zone transfer that failed or came back incomplete.
func (d *demo) printAnswers(info *landscapeInfo) error {
	_, digErr := exec.LookPath("dig")
	haveDig := digErr == nil
	var errs []error
	fmt.Println()
	fmt.Println("Every cluster's names, answered through each cluster's CoreDNS (forwarded to the central server):")
	for _, c := range info.Clusters {
		fmt.Printf("\n# through %s's CoreDNS, 127.0.0.1:%d\n", c.Name, c.Port)
		for _, n := range info.Names {
			rcode, answer, err := d.dig(c.Port, n.Name, haveDig)
			if err == nil && !hasA(answer, n.Name, n.Want) {
				err = fmt.Errorf("%s answered %s %v, want A %s", n.Name, dns.RcodeToString[rcode], answer, n.Want)
			}
			errs = append(errs, wrap(fmt.Sprintf("%s's CoreDNS", c.Name), err))
		}
	}
	fmt.Printf("\n# where an answer comes from: gatewaydns's explain (on at the central server), a TXT record in the CHAOS class per record\n")
	errs = append(errs, wrap("explain", d.explain(info.CentralPort, explained, "eu1", "HTTPRoute/shop/web", haveDig)))
	for _, r := range info.Refused {
		fmt.Printf("\n# %s\n", r.Why)
		rcode, answer, err := d.dig(r.Port, r.Name, haveDig)
		if err == nil && rcode != dns.RcodeNameError {
			err = fmt.Errorf("%s answered %s %v, want NXDOMAIN", r.Name, dns.RcodeToString[rcode], answer)
		}
		errs = append(errs, wrap("the refused name", err))
	}
	fmt.Printf("\n# the whole zone, by zone transfer from the central server (what a secondary loads)\n")
	rrs, err := d.axfr(info.CentralPort, haveDig)
	if err == nil {
		err = dnscheck.CompleteTransfer(zone, rrs)
	}
	for _, n := range info.Names {
		if err == nil && !hasA(rrs, n.Name, n.Want) {
			err = fmt.Errorf("the transfer lacks %s A %s", n.Name, n.Want)
		}
	}
	errs = append(errs, wrap("the zone transfer", err))
	if !haveDig {
		fmt.Println("\n(dig is not installed, so these answers came from a Go DNS client; to get dig:")
		fmt.Println(" apt-get install bind9-dnsutils, dnf install bind-utils or brew install bind)")
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	ca, cert, key := d.rel(d.path("pki", "ca.crt")), d.rel(d.path("pki", "admin.crt")), d.rel(d.path("pki", "admin.key"))
	eu1, us1 := info.Clusters[0], info.Clusters[1]
	fmt.Printf(`
The landscape keeps running. Query it yourself:
  dig @127.0.0.1 -p %d web.eu1.%s         # the central server
  dig @127.0.0.1 -p %d api.us1.%s         # eu1's CoreDNS, forwarding to it
  dig @127.0.0.1 -p %d db.eu1.%s          # us1's CoreDNS
  bin/etcdctl --endpoints %s --cacert %s --cert %s --key %s \
      get --prefix /skydns/cluster/openmcp                     # the records, with their owners
  kubectl --kubeconfig %s get gateways,httproutes,tlsroutes,ingresses,services,dnsendpoints -A
  dig @127.0.0.1 -p %d CH TXT %s +short        # where its answer comes from
Change a Gateway's address as its controller would, and ask again (answered within milliseconds):
  %s set-address eu1 203.0.113.99 && dig @127.0.0.1 -p %d web.eu1.%s +short
Metrics: %s
Logs: %s/*.log
Stop it all: make demo-down
`, info.CentralPort, zone, eu1.Port, zone, us1.Port, zone,
		info.EtcdURL, ca, cert, key, d.rel(eu1.Kubeconfig), info.CentralPort, explained,
		builtDriver, us1.Port, zone,
		strings.Join(info.Metrics, ", "), d.rel(d.dir))
	return nil
}

// explained is the name the demo asks explain about: eu1's HTTPRoute shop/web publishes it.
const explained = "web.eu1." + zone

// builtDriver is the demo's driver as make demo builds it; set-address and make demo-down use it
// rather than a go run that would build it again with other flags.
const builtDriver = ".cache/bin/" + driverName

// explain prints `dig CH TXT name` at the central server and checks that every record of the
// name is explained, owned by owner and made from source.
func (d *demo) explain(port int, name, owner, source string, haveDig bool) error {
	fmt.Printf("$ dig @127.0.0.1 -p %d CH TXT %s +noall +answer\n", port, name)
	var rrs []dns.RR
	if haveDig {
		out, err := exec.Command("dig", "@127.0.0.1", "-p", strconv.Itoa(port), "CH", "TXT", name, "+noall", "+answer").CombinedOutput()
		fmt.Print(string(out))
		if err != nil {
			return fmt.Errorf("dig CH TXT %s: %w", name, err)
		}
		if rrs, err = parseRRs(string(out)); err != nil {
			return err
		}
	} else {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), dns.TypeTXT)
		m.Question[0].Qclass = dns.ClassCHAOS
		r, _, err := (&dns.Client{Timeout: 3 * time.Second}).Exchange(m, fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return err
		}
		for _, rr := range r.Answer {
			fmt.Println(rr.String())
		}
		rrs = r.Answer
	}
	return explainedBy(rrs, name, owner, source)
}

// explainedBy checks an explain answer: at least one TXT record, each with the record's key,
// owner and source.
func explainedBy(rrs []dns.RR, name, owner, source string) error {
	if len(rrs) == 0 {
		return fmt.Errorf("no explanation of %s", name)
	}
	for _, rr := range rrs {
		txt, ok := rr.(*dns.TXT)
		if !ok || txt.Hdr.Class != dns.ClassCHAOS {
			return fmt.Errorf("explain answered %v, want CH TXT records", rr)
		}
		if !strings.HasPrefix(txt.Txt[0], "key=/skydns/") || !slices.Contains(txt.Txt, "owner="+owner) || !slices.Contains(txt.Txt, "source="+source) {
			return fmt.Errorf("explain answered %q, want a key, owner=%s and source=%s", txt.Txt, owner, source)
		}
	}
	return nil
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// hasA reports whether rrs hold name A ip.
func hasA(rrs []dns.RR, name, ip string) bool {
	for _, rr := range rrs {
		if a, ok := rr.(*dns.A); ok && strings.EqualFold(a.Hdr.Name, dns.Fqdn(name)) && a.A.String() == ip {
			return true
		}
	}
	return false
}

// parseRRs reads the records of dig's output: every line that is not blank or a comment.
func parseRRs(out string) ([]dns.RR, error) {
	var rrs []dns.RR
	for l := range strings.Lines(out) {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, ";") {
			continue
		}
		rr, err := dns.NewRR(l)
		if err != nil {
			return rrs, fmt.Errorf("dig printed %q: %w", l, err)
		}
		rrs = append(rrs, rr)
	}
	return rrs, nil
}

// axfr prints a dig AXFR of the zone and returns the records it transferred.
func (d *demo) axfr(port int, haveDig bool) ([]dns.RR, error) {
	fmt.Printf("$ dig @127.0.0.1 -p %d %s AXFR +nocmd +nostats\n", port, zone)
	if haveDig {
		out, err := exec.Command("dig", "@127.0.0.1", "-p", strconv.Itoa(port), zone, "AXFR", "+nocmd", "+nostats").CombinedOutput()
		fmt.Print(string(out))
		if err != nil {
			return nil, fmt.Errorf("dig AXFR: %w", err)
		}
		// A refused or failed transfer is a comment ("; Transfer failed.") and exit status 0:
		// CompleteTransfer tells it from a zone.
		return parseRRs(string(out))
	}
	rrs, err := dnscheck.Transfer(fmt.Sprintf("127.0.0.1:%d", port), zone)
	for _, rr := range rrs {
		fmt.Println(rr.String())
	}
	return rrs, err
}

// dig prints a dig command and its answer section (or, for a name without one, its status),
// and returns the answer's rcode and records.
func (d *demo) dig(port int, name string, haveDig bool) (int, []dns.RR, error) {
	if haveDig {
		out, err := exec.Command("dig", "@127.0.0.1", "-p", strconv.Itoa(port), name, "+noall", "+answer", "+comments").CombinedOutput()
		if err != nil {
			fmt.Printf("$ dig @127.0.0.1 -p %d %s\n%s", port, name, out)
			return 0, nil, fmt.Errorf("dig %s: %w", name, err)
		}
		rcode := -1
		for l := range strings.Lines(string(out)) {
			if _, st, ok := strings.Cut(l, "status: "); ok {
				rcode = dns.StringToRcode[strings.TrimSuffix(strings.Fields(st)[0], ",")]
			}
		}
		answer, err := parseRRs(string(out))
		if len(answer) > 0 {
			var lines []string
			for _, rr := range answer {
				lines = append(lines, rr.String())
			}
			fmt.Printf("$ dig @127.0.0.1 -p %d %s +noall +answer\n%s\n", port, name, strings.Join(lines, "\n"))
		} else {
			fmt.Printf("$ dig @127.0.0.1 -p %d %s | grep status\n;; status: %s\n", port, name, dns.RcodeToString[rcode])
		}
		return rcode, answer, err
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	r, _, err := (&dns.Client{Timeout: 3 * time.Second}).Exchange(m, fmt.Sprintf("127.0.0.1:%d", port))
	fmt.Printf("$ dig @127.0.0.1 -p %d %s +noall +answer\n", port, name)
	switch {
	case err != nil:
		fmt.Printf(";; error: %v\n", err)
		return 0, nil, err
	case len(r.Answer) == 0:
		fmt.Printf(";; status: %s\n", dns.RcodeToString[r.Rcode])
	default:
		for _, rr := range r.Answer {
			fmt.Println(rr.String())
		}
	}
	return r.Rcode, r.Answer, nil
}
