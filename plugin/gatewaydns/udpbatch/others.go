package udpbatch

import (
	"encoding/binary"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Taken lists the addresses of addrs (host:port) that a socket of another process is bound to:
// a socket of the path there would join that process's SO_REUSEPORT group (another DNS server
// of the same user, such as a node-local cache on its link-local address) and take a share of
// its questions. The caller leaves them out. Read from /proc; where /proc cannot be read,
// nothing is taken.
func Taken(addrs []string) []string {
	own := ownSockets()
	bound := map[string][]string{} // address -> socket inodes bound to it
	for _, f := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(data), "\n")[1:] {
			fields := strings.Fields(l)
			if len(fields) < 10 {
				continue
			}
			if addr, ok := procAddr(fields[1]); ok {
				bound[addr] = append(bound[addr], fields[9])
			}
		}
	}
	var taken []string
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			continue
		}
		ip := net.ParseIP(host)
		if ip == nil {
			continue
		}
		for _, inode := range bound[net.JoinHostPort(ip.String(), port)] {
			if !own[inode] {
				taken = append(taken, a)
				break
			}
		}
	}
	return taken
}

// procAddr reads a local address of /proc/net/udp (hex, the IP in host byte order by words).
func procAddr(s string) (string, bool) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return "", false
	}
	raw, err := hex.DecodeString(h)
	if err != nil || len(raw)%4 != 0 {
		return "", false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(ip[i:], binary.LittleEndian.Uint32(raw[i:]))
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return "", false
	}
	return net.JoinHostPort(ip.String(), strconv.FormatUint(port, 10)), true
}

// ownSockets are the inodes of this process's sockets.
func ownSockets() map[string]bool {
	own := map[string]bool{}
	fds, _ := filepath.Glob("/proc/self/fd/*")
	for _, fd := range fds {
		if link, err := os.Readlink(fd); err == nil && strings.HasPrefix(link, "socket:[") {
			own[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	return own
}
