package packed

import (
	"encoding/binary"

	"github.com/miekg/dns"
)

// Query is what a packed reply takes from the question it answers.
type Query struct {
	ID    uint16
	Flags uint16 // the request's header flags: RD and CD are echoed, as dns.Msg.SetReply does
	// Name is the question's name in wire form as asked; Lower is it in lower case, the key of
	// the index (its text form, without escapes: ParseQuery takes no other).
	Name   []byte
	Qtype  uint16
	Qclass uint16
	// OPT: the request has an OPT record (no options, version 0), echoed with the request's
	// UDP size and flags as request.SizeAndDo does; OPTTTL is its TTL field.
	OPT     bool
	UDPSize uint16
	OPTTTL  uint32
	// TCP or the client's address family (1 IPv4, 2 IPv6), which bound the reply's size as
	// request.Scrub bounds it.
	TCP    bool
	Family int
}

// Header flag bits.
const (
	flagQR = 1 << 15
	flagAA = 1 << 10
	flagRD = 1 << 8
	flagCD = 1 << 4
)

// optLen is the length of an OPT record without options.
const optLen = 11

// Fits reports whether a reply of n bytes before the OPT record goes out to q as it is: within
// the client's size (512 without EDNS, request.Request.Size) and, over UDP, below the sizes
// past which request.Scrub compresses it (1480 bytes over IPv4, 1220 over IPv6).
func (q *Query) Fits(n int) bool {
	if q.OPT {
		n += optLen
	}
	if q.TCP {
		return n <= dns.MaxMsgSize
	}
	size := dns.MinMsgSize
	if q.OPT && int(q.UDPSize) > size {
		size = int(q.UDPSize)
	}
	limit := 1480
	if q.Family == 2 {
		limit = 1220
	}
	return n <= size && n <= limit
}

// Len is the length of the reply a makes for q; neg is the zone's negative reply, for NODATA.
func (a *Answer) Len(q *Query, neg *Negative) int {
	if a.neg {
		return NegativeLen(q, neg)
	}
	return len(a.msg)
}

// Negative reports whether a is a NODATA reply, which needs the zone's Negative.
func (a *Answer) Negative() bool { return a.neg }

// NegativeLen is the length of a negative reply to q.
func NegativeLen(q *Query, neg *Negative) int { return 12 + len(q.Name) + 4 + len(neg.soa) }

// AppendReply appends a's reply to q to dst; neg is the zone's negative reply, for NODATA.
// The caller has checked that it Fits.
func (a *Answer) AppendReply(dst []byte, q *Query, neg *Negative) []byte {
	if a.neg {
		return AppendNegative(dst, q, dns.RcodeSuccess, neg)
	}
	start := len(dst)
	dst = append(dst, a.msg...)
	out := dst[start:]
	binary.BigEndian.PutUint16(out, q.ID)
	out[2] |= byte((q.Flags & flagRD) >> 8)
	out[3] |= byte(q.Flags & flagCD)
	for _, o := range a.names {
		copy(out[o:], q.Name)
	}
	return appendOPT(dst, start, q)
}

// AppendNegative appends the negative reply with rcode (NXDOMAIN, or NOERROR for NODATA) to q:
// the question, and the zone's SOA in the authority section, as the handler writes it.
func AppendNegative(dst []byte, q *Query, rcode int, neg *Negative) []byte {
	start := len(dst)
	flags := flagQR | flagAA | q.Flags&(flagRD|flagCD) | uint16(rcode)&0xF // #nosec G115 -- an rcode of 4 bits
	dst = binary.BigEndian.AppendUint16(dst, q.ID)
	dst = binary.BigEndian.AppendUint16(dst, flags)
	dst = append(dst, 0, 1, 0, 0, 0, 1, 0, 0) // one question, one authority record
	dst = append(dst, q.Name...)
	dst = binary.BigEndian.AppendUint16(dst, q.Qtype)
	dst = binary.BigEndian.AppendUint16(dst, q.Qclass)
	dst = append(dst, neg.soa...)
	return appendOPT(dst, start, q)
}

// appendOPT appends the request's OPT record to the reply at dst[start:], as request.SizeAndDo
// does: the request's UDP size, version 0 and its flags (DO among them), the extended rcode 0.
func appendOPT(dst []byte, start int, q *Query) []byte {
	if !q.OPT {
		return dst
	}
	ar := binary.BigEndian.Uint16(dst[start+10:])
	binary.BigEndian.PutUint16(dst[start+10:], ar+1)
	dst = append(dst, 0, 0, byte(dns.TypeOPT))
	dst = binary.BigEndian.AppendUint16(dst, q.UDPSize)
	dst = binary.BigEndian.AppendUint32(dst, q.OPTTTL&0xFF00)
	return append(dst, 0, 0)
}

// ParseQuery reads a question from a request in wire form, for a packed reply: ok is false for
// anything else (a response, another opcode than QUERY, more than one question, other records
// than one OPT without options of version 0, a name with other bytes than letters, digits, '-'
// and '_', a truncated message), which the server's own handler answers. lowered receives the
// name in lower case, in text form, and q.Name refers into req.
func ParseQuery(req []byte, q *Query, lowered []byte) (name []byte, ok bool) {
	if len(req) < 12+1+4 {
		return nil, false
	}
	flags := binary.BigEndian.Uint16(req[2:])
	qd, an, ns, ar := binary.BigEndian.Uint16(req[4:]), binary.BigEndian.Uint16(req[6:]), binary.BigEndian.Uint16(req[8:]), binary.BigEndian.Uint16(req[10:])
	if flags&flagQR != 0 || (flags>>11)&0xF != dns.OpcodeQuery || qd != 1 || an != 0 || ns != 0 || ar > 1 {
		return nil, false
	}
	lowered = lowered[:0]
	off := 12
	for {
		if off >= len(req) {
			return nil, false
		}
		l := int(req[off])
		if l == 0 {
			off++
			break
		}
		if l > 63 || off+1+l > len(req) {
			return nil, false
		}
		for _, c := range req[off+1 : off+1+l] {
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
			case 'A' <= c && c <= 'Z':
				c += 'a' - 'A'
			default:
				return nil, false
			}
			lowered = append(lowered, c)
		}
		lowered = append(lowered, '.')
		off += 1 + l
	}
	if off == 13 || off-12 > 255 || off+4 > len(req) {
		return nil, false // the root, or too long
	}
	*q = Query{ID: binary.BigEndian.Uint16(req), Flags: flags, Name: req[12:off],
		Qtype: binary.BigEndian.Uint16(req[off:]), Qclass: binary.BigEndian.Uint16(req[off+2:])}
	off += 4
	if ar == 1 {
		// An OPT record: the root's name, type OPT, no options.
		if off+optLen != len(req) || req[off] != 0 || binary.BigEndian.Uint16(req[off+1:]) != dns.TypeOPT || binary.BigEndian.Uint16(req[off+9:]) != 0 {
			return nil, false
		}
		q.OPT, q.UDPSize, q.OPTTTL = true, binary.BigEndian.Uint16(req[off+3:]), binary.BigEndian.Uint32(req[off+5:])
		if q.OPTTTL&0x00FF0000 != 0 {
			return nil, false // another EDNS version than 0: BADVERS is the server's
		}
		off += optLen
	}
	if off != len(req) {
		return nil, false
	}
	return lowered, true
}
