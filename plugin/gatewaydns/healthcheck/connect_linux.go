//go:build linux

package healthcheck

import (
	"errors"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// connectTCP connects to addr and resets the connection, by deadline: a tcp check's whole work,
// on a socket of its own that the runtime's poller waits on, as net.Dialer's are. net.Dialer
// took 46 allocations (2.7 kB) a check to do the same: at 20,000 checks a second that made the
// collector run once or twice a second over the heap of a 10k-name zone, and the questions of
// a server of one core wait behind it (bench phase H). ok is false for an address it does not
// connect to this way (a zone in it).
func connectTCP(addr netip.AddrPort, deadline time.Time) (ok bool, err error) {
	ip := addr.Addr()
	if ip.Zone() != "" {
		return false, nil
	}
	family, sa := unix.AF_INET6, unix.Sockaddr(nil)
	if ip.Is4() || ip.Is4In6() {
		family, sa = unix.AF_INET, &unix.SockaddrInet4{Port: int(addr.Port()), Addr: ip.Unmap().As4()}
	} else {
		sa = &unix.SockaddrInet6{Port: int(addr.Port()), Addr: ip.As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return true, os.NewSyscallError("socket", err)
	}
	// Reset instead of closing: twenty thousand closes a second would leave the checker's side
	// with a million sockets in TIME_WAIT.
	if err := unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1}); err != nil {
		unix.Close(fd)
		return true, os.NewSyscallError("setsockopt", err)
	}
	switch err := unix.Connect(fd, sa); err {
	case nil:
		return true, unix.Close(fd)
	case unix.EINPROGRESS:
	default:
		unix.Close(fd)
		return true, os.NewSyscallError("connect", err)
	}
	f := os.NewFile(uintptr(fd), "") // the poller's from here; f.Close closes fd
	defer f.Close()
	if err := f.SetWriteDeadline(deadline); err != nil {
		return true, err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return true, err
	}
	var connErr error
	// Every call looks at the socket itself: RawConn.Write forgets, before its first call, a
	// wake-up that came before it (one that came between Connect and NewFile, on loopback).
	err = rc.Write(func(fd uintptr) bool {
		// As net's connect: SO_ERROR says a failure; a socket without one is connected once it
		// has a peer.
		switch e, gerr := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR); {
		case gerr != nil:
			connErr = os.NewSyscallError("getsockopt", gerr)
		case e == 0 || unix.Errno(e) == unix.EISCONN:
			if _, perr := unix.Getpeername(int(fd)); perr != nil {
				return false
			}
		case unix.Errno(e) == unix.EINPROGRESS || unix.Errno(e) == unix.EALREADY || unix.Errno(e) == unix.EINTR:
			return false
		default:
			connErr = os.NewSyscallError("connect", unix.Errno(e))
		}
		return true
	})
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true, errTimeout
	}
	if err != nil {
		return true, err
	}
	return true, connErr
}
