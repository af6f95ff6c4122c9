//go:build !linux

package healthcheck

import (
	"net/netip"
	"time"
)

// connectTCP is the linux one's fallback: net.Dialer does it (ok is false).
func connectTCP(netip.AddrPort, time.Time) (ok bool, err error) { return false, nil }
