package record

import (
	"math"
	"unicode/utf8"
)

// Loading a million values through encoding/json takes seconds; nearly all of them are in the
// form writers produce: an object of the known fields, in lower case, with plain strings and
// integers. parseValue reads that form directly and hands anything else (escapes, nulls,
// fractions or exponents, unknown or differently cased fields, other bytes) to encoding/json,
// so that what it accepts it reads as encoding/json does (FuzzDecode checks).

// parseValue sets v from the JSON object b when b is in the plain form; false when it is not,
// and v is then to be read by encoding/json.
func parseValue(b []byte, v *Value) bool {
	p := valueParser{b: b}
	if !p.byte('{') {
		return false
	}
	if p.byte('}') {
		return p.end()
	}
	for {
		name, ok := p.string()
		if !ok || !p.byte(':') || !p.field(name, v) {
			return false
		}
		if p.byte('}') {
			return p.end()
		}
		if !p.byte(',') {
			return false
		}
	}
}

type valueParser struct {
	b []byte
	i int
}

func (p *valueParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// byte consumes c, after white space, if it is next.
func (p *valueParser) byte(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end reports whether nothing but white space follows.
func (p *valueParser) end() bool {
	p.space()
	return p.i == len(p.b)
}

// field reads the value of the field called name into v.
func (p *valueParser) field(name string, v *Value) bool {
	var ok bool
	switch name {
	case "host":
		v.Host, ok = p.string()
	case "text":
		v.Text, ok = p.string()
	case "group":
		v.Group, ok = p.string()
	case "owner":
		v.Owner, ok = p.string()
	case "port":
		v.Port, ok = p.int()
	case "priority":
		v.Priority, ok = p.int()
	case "weight":
		v.Weight, ok = p.int()
	case "targetstrip":
		v.TargetStrip, ok = p.int()
	case "sourceCount":
		v.SourceCount, ok = p.int()
	case "ttl":
		var n int
		if n, ok = p.int(); ok && n >= 0 && n <= math.MaxUint32 {
			v.TTL = uint32(n)
		} else {
			ok = false
		}
	case "mail":
		v.Mail, ok = p.bool()
	case "sources":
		v.Sources, ok = p.strings()
	case "steering":
		v.Steering, ok = p.steering()
	}
	return ok
}

// steering reads a steering object of the known fields (Steering.UnmarshalJSON reads others).
func (p *valueParser) steering() (s Steering, ok bool) {
	if !p.byte('{') {
		return s, false
	}
	if p.byte('}') {
		return s, true
	}
	for {
		name, ok := p.string()
		if !ok || !p.byte(':') {
			return s, false
		}
		switch name {
		case "weight":
			s.Weight, ok = p.int()
			s.Weighted = true
		case "priority":
			s.Priority, ok = p.int()
		case "healthCheck":
			s.HealthCheck, ok = p.string()
		default:
			ok = false
		}
		if !ok {
			return s, false
		}
		if p.byte('}') {
			return s, true
		}
		if !p.byte(',') {
			return s, false
		}
	}
}

// string reads a string of printable characters without escapes.
func (p *valueParser) string() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return "", false
		}
		p.i++
	}
	return "", false
}

// int reads an integer of at most 18 digits, so that it fits an int.
func (p *valueParser) int() (int, bool) {
	p.space()
	neg := p.i < len(p.b) && p.b[p.i] == '-'
	if neg {
		p.i++
	}
	start, n := p.i, 0
	for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
		n = n*10 + int(p.b[p.i]-'0')
		p.i++
	}
	digits := p.i - start
	if digits == 0 || digits > 18 || digits > 1 && p.b[start] == '0' {
		return 0, false
	}
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case '.', 'e', 'E':
			return 0, false // a number encoding/json reads, or refuses, as it sees fit
		}
	}
	if neg {
		n = -n
	}
	return n, true
}

func (p *valueParser) bool() (bool, bool) {
	p.space()
	for _, lit := range []string{"true", "false"} {
		if len(p.b)-p.i >= len(lit) && string(p.b[p.i:p.i+len(lit)]) == lit {
			p.i += len(lit)
			return lit == "true", true
		}
	}
	return false, false
}

// strings reads an array of strings; an empty one is an empty slice, not nil, as
// encoding/json makes it.
func (p *valueParser) strings() ([]string, bool) {
	if !p.byte('[') {
		return nil, false
	}
	out := []string{}
	if p.byte(']') {
		return out, true
	}
	for {
		s, ok := p.string()
		if !ok {
			return nil, false
		}
		out = append(out, s)
		if p.byte(']') {
			return out, true
		}
		if !p.byte(',') {
			return nil, false
		}
	}
}
