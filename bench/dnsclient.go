package main

import (
	"fmt"
	"time"

	"github.com/miekg/dns"
)

// ask sends one UDP question.
func ask(client *dns.Client, server, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	r, _, err := client.Exchange(m, server)
	if err != nil {
		return nil, fmt.Errorf("asking %s for %s %s: %w", server, name, dns.TypeToString[qtype], err)
	}
	return r, nil
}

// answersA reports whether the answer section holds an A or AAAA record with ip.
func answersA(r *dns.Msg, ip string) bool {
	if r == nil {
		return false
	}
	for _, rr := range r.Answer {
		switch v := rr.(type) {
		case *dns.A:
			if v.A.String() == ip {
				return true
			}
		case *dns.AAAA:
			if v.AAAA.String() == ip {
				return true
			}
		}
	}
	return false
}

// waitAnswer asks every interval until name's A answer holds ip; it returns the time from
// since to that answer.
func waitAnswer(server, name, ip string, since time.Time, interval, timeout time.Duration) (time.Duration, error) {
	client := &dns.Client{Net: "udp", Timeout: 500 * time.Millisecond}
	for {
		r, _ := ask(client, server, name, dns.TypeA)
		if answersA(r, ip) {
			return time.Since(since), nil
		}
		if time.Since(since) > timeout {
			return 0, fmt.Errorf("%s does not answer %s with %s after %v", server, name, ip, timeout)
		}
		time.Sleep(interval)
	}
}

// soaSerial asks server for the zone's SOA over UDP and returns its serial.
func soaSerial(client *dns.Client, server string) (uint32, error) {
	r, err := ask(client, server, zone, dns.TypeSOA)
	if err != nil {
		return 0, err
	}
	for _, rr := range r.Answer {
		if soa, ok := rr.(*dns.SOA); ok {
			return soa.Serial, nil
		}
	}
	return 0, fmt.Errorf("%s: no SOA in the answer for %s (rcode %s)", server, zone, dns.RcodeToString[r.Rcode])
}
