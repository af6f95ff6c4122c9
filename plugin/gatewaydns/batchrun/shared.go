package batchrun

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/coredns/coredns/core/dnsserver"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/handover"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/udpbatch"
)

// A CoreDNS reload starts the new instance's servers, each in a goroutine of its own, and
// stops the old instance's: a path started per run would bind new sockets beside the old
// ones, and the datagrams the kernel queued on the old ones would be lost when they close;
// and the old run may stop before the new server announces itself. So a path outlives the
// run that started it, as CoreDNS's own listener does. A run reserves the paths of its
// servers when it is made (New: in the instance's startup, before any server of it starts),
// and serves through them once its server announces itself; the path answers with the
// newest run that serves, waits (Pause) while the runs left have not served yet, and stops
// when the last run lets go. A reload that fails lets its run go, and the path answers as the
// instance that goes on.
var shared = struct {
	sync.Mutex
	byKey map[string]*sharedPath
}{byKey: map[string]*sharedPath{}}

// sharedPath is a path (nil until a run first serves) and the runs that hold it, oldest
// first. Guarded by shared's lock.
type sharedPath struct {
	key     string
	path    *udpbatch.Path
	holders []holder
}

type holder struct {
	run      *Run
	serving  *udpbatch.Serving // nil until the run's server announced itself
	reserved time.Time
}

// reserve makes r a holder of the path of each server address of configs.
func (r *Run) reserve(configs []*dnsserver.Config) {
	shared.Lock()
	defer shared.Unlock()
	for _, c := range configs {
		for _, addr := range serverAddrs(c) {
			key := pathKey(addr, r.readers, c.TsigSecret)
			sp := shared.byKey[key]
			if sp == nil {
				sp = &sharedPath{key: key}
				shared.byKey[key] = sp
			}
			if !slices.ContainsFunc(sp.holders, func(h holder) bool { return h.run == r }) {
				sp.holders = append(sp.holders, holder{run: r, reserved: time.Now()})
			}
		}
	}
}

// serveOn makes the path of key answer with r's serving, starting it (binding addrs) when no
// run served through it yet.
func (r *Run) serveOn(key string, serving udpbatch.Serving, start func() (*udpbatch.Path, error)) error {
	shared.Lock()
	defer shared.Unlock()
	sp := shared.byKey[key]
	i := -1
	if sp != nil {
		i = slices.IndexFunc(sp.holders, func(h holder) bool { return h.run == r })
	}
	if i < 0 {
		return fmt.Errorf("no path reserved for this server")
	}
	sp.holders[i].serving = &serving
	if sp.path == nil {
		p, err := start()
		if err != nil {
			return err
		}
		sp.path = p
	}
	sp.answerAsNewest()
	return nil
}

// answerAsNewest makes the path answer as its newest holder that serves, or wait while a
// newer one has not served yet.
func (sp *sharedPath) answerAsNewest() {
	if sp.path == nil || len(sp.holders) == 0 {
		return
	}
	if newest := sp.holders[len(sp.holders)-1]; newest.serving != nil {
		sp.path.Serve(*newest.serving)
		return
	}
	sp.path.Pause()
	time.AfterFunc(pendingWait, func() { expirePending(sp.key) })
}

// letGo ends r's hold of every path; a path no run holds any more stops.
func (r *Run) letGo() error { return letGo(func(key string, h holder) bool { return h.run == r }) }

// letGoOf ends r's hold of the path of key.
func (r *Run) letGoOf(key string) {
	if err := letGo(func(k string, h holder) bool { return k == key && h.run == r }); err != nil {
		log.Warning(err)
	}
}

// letGo ends the holds for which drop holds; a path no run holds any more stops.
func letGo(drop func(key string, h holder) bool) error {
	shared.Lock()
	var stop []*udpbatch.Path
	for key, sp := range shared.byKey {
		n := len(sp.holders)
		sp.holders = slices.DeleteFunc(sp.holders, func(h holder) bool { return drop(key, h) })
		switch {
		case len(sp.holders) == n:
		case len(sp.holders) == 0:
			delete(shared.byKey, key)
			if sp.path != nil {
				stop = append(stop, sp.path)
			}
		default:
			sp.answerAsNewest()
		}
	}
	shared.Unlock()
	var errs []error
	for _, p := range stop {
		if err := p.Stop(handover.StopWait); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// pendingWait bounds how long a path waits for its newest run to serve: a reload's servers
// announce themselves within milliseconds of its startup; one that does not (its server
// never serves UDP) must not hold the path's datagrams for longer.
const pendingWait = 2 * time.Second

// expirePending drops the runs that reserved the path of key and have not served within
// pendingWait.
func expirePending(key string) {
	err := letGo(func(k string, h holder) bool {
		return k == key && h.serving == nil && h.reserved.Before(time.Now().Add(-pendingWait))
	})
	if err != nil {
		log.Warning(err)
	}
}

// serverAddrs are the addresses of the CoreDNS servers of c, as CoreDNS names them
// (dnsserver.Server.Addr): one per listen host.
func serverAddrs(c *dnsserver.Config) []string {
	var out []string
	for _, h := range c.ListenHosts {
		if a, err := net.ResolveTCPAddr("tcp", net.JoinHostPort(h, c.Port)); err == nil {
			out = append(out, c.Transport+"://"+a.String())
		}
	}
	return out
}

// pathKey is what two runs must have in common to share a path: the server (its address),
// how many readers, and what the handoff server checks signed questions with.
func pathKey(server string, readers int, tsig map[string]string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %d\n", server, readers)
	names := make([]string, 0, len(tsig))
	for name := range tsig {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(h, "%q %q\n", name, tsig[name])
	}
	return hex.EncodeToString(h.Sum(nil))
}
