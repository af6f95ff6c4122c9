// Package freeport hands out loopback ports for the processes a test or a benchmark starts.
//
// A port found free is free only until someone binds it, and CoreDNS binds its DNS, health,
// ready and metrics listeners with SO_REUSEPORT: two coredns processes handed one port both
// start, and the kernel shares the port's connections between them. A scrape of a killed
// process is then answered by the other one, and a query by a server that does not hold the
// zone. So a port is handed out at most once on this machine: each one taken is locked in a
// file that stays locked while this process lives, and every test binary and the bench take
// their ports here.
package freeport

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

var (
	mu    sync.Mutex
	locks []*os.File // held open: closing one, or its finalizer, would release its port
)

// Take returns n distinct loopback ports, each free for TCP and UDP now and handed out by no
// earlier call in any process still running.
func Take(n int) ([]int, error) {
	// Per user: SO_REUSEPORT shares a port only between processes of one user, and another
	// user's directory may not be ours to write.
	dir := filepath.Join(os.TempDir(), "gatewaydns-ports-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("freeport: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	var out []int
	var probes []net.Listener // held until every port is chosen, so that none comes back twice
	defer func() {
		for _, l := range probes {
			l.Close()
		}
	}()
	for tries := 0; len(out) < n; tries++ {
		if tries >= 50*n {
			return nil, fmt.Errorf("freeport: no %d free loopback ports in %d tries", n, tries)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("freeport: %w", err)
		}
		probes = append(probes, l)
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // taken for UDP
		}
		u.Close()
		ok, err := lock(dir, port)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, port)
		}
	}
	return out, nil
}

// lock claims port for this process's life; false when another claim holds it.
func lock(dir string, port int) (bool, error) {
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return false, fmt.Errorf("freeport: %w", err)
	}
	// flock conflicts between open file descriptions, so a second claim from this very
	// process fails as one from another process does.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil
		}
		return false, fmt.Errorf("freeport: locking port %d: %w", port, err)
	}
	locks = append(locks, f)
	return true, nil
}
