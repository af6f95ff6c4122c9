// What `up` prints once the landscape is ready: every name through every cluster's CoreDNS, the
// refused name, and the whole zone by transfer.

package main

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
)

func (d *demo) printAnswers(info *landscapeInfo) {
	_, digErr := exec.LookPath("dig")
	fmt.Println()
	fmt.Println("Every cluster's names, answered through each cluster's CoreDNS (forwarded to the central server):")
	for _, c := range info.Clusters {
		fmt.Printf("\n# through %s's CoreDNS, 127.0.0.1:%d\n", c.Name, c.Port)
		for _, n := range info.Names {
			d.dig(c.Port, n.Name, digErr == nil)
		}
	}
	for _, r := range info.Refused {
		fmt.Printf("\n# %s\n", r.Why)
		d.dig(r.Port, r.Name, digErr == nil)
	}
	fmt.Printf("\n# the whole zone, by zone transfer from the central server (what a secondary loads)\n")
	d.axfr(info.CentralPort, digErr == nil)
	if digErr != nil {
		fmt.Println("\n(dig is not installed, so these answers came from a Go DNS client; to get dig:")
		fmt.Println(" apt-get install bind9-dnsutils, dnf install bind-utils or brew install bind)")
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
Change a Gateway's address as its controller would, and ask again (answered within milliseconds):
  go run ./hack/demo set-address eu1 203.0.113.99 && dig @127.0.0.1 -p %d web.eu1.%s +short
Metrics: %s
Logs: %s/*.log
Stop it all: make demo-down
`, info.CentralPort, zone, eu1.Port, zone, us1.Port, zone,
		info.EtcdURL, ca, cert, key, d.rel(eu1.Kubeconfig), us1.Port, zone,
		strings.Join(info.Metrics, ", "), d.rel(d.dir))
}

// axfr prints a dig AXFR of the zone and the records it transferred.
func (d *demo) axfr(port int, haveDig bool) {
	fmt.Printf("$ dig @127.0.0.1 -p %d %s AXFR +nocmd +nostats\n", port, zone)
	if haveDig {
		out, err := exec.Command("dig", "@127.0.0.1", "-p", strconv.Itoa(port), zone, "AXFR", "+nocmd", "+nostats").CombinedOutput()
		fmt.Print(string(out))
		if err != nil {
			fmt.Printf(";; error: %v\n", err)
		}
		return
	}
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(zone))
	ch, err := (&dns.Transfer{}).In(m, fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		fmt.Printf(";; error: %v\n", err)
		return
	}
	for env := range ch {
		if env.Error != nil {
			fmt.Printf(";; error: %v\n", env.Error)
			return
		}
		for _, rr := range env.RR {
			fmt.Println(rr.String())
		}
	}
}

// dig prints a dig command and its answer section (or, for a name without one, its status).
func (d *demo) dig(port int, name string, haveDig bool) {
	if haveDig {
		out, err := exec.Command("dig", "@127.0.0.1", "-p", strconv.Itoa(port), name, "+noall", "+answer", "+comments").CombinedOutput()
		var answer []string
		status := ""
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "status:") {
				if i := strings.Index(l, "status: "); i >= 0 {
					status = strings.TrimSuffix(strings.Fields(l[i+len("status: "):])[0], ",")
				}
			}
			if l != "" && !strings.HasPrefix(l, ";") {
				answer = append(answer, l)
			}
		}
		if len(answer) > 0 {
			fmt.Printf("$ dig @127.0.0.1 -p %d %s +noall +answer\n%s\n", port, name, strings.Join(answer, "\n"))
		} else {
			if err != nil {
				status += " (" + err.Error() + ")"
			}
			fmt.Printf("$ dig @127.0.0.1 -p %d %s | grep status\n;; status: %s\n", port, name, status)
		}
		return
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	r, _, err := (&dns.Client{Timeout: 3 * time.Second}).Exchange(m, fmt.Sprintf("127.0.0.1:%d", port))
	fmt.Printf("$ dig @127.0.0.1 -p %d %s +noall +answer\n", port, name)
	switch {
	case err != nil:
		fmt.Printf(";; error: %v\n", err)
	case len(r.Answer) == 0:
		fmt.Printf(";; status: %s\n", dns.RcodeToString[r.Rcode])
	default:
		for _, rr := range r.Answer {
			fmt.Println(rr.String())
		}
	}
}
