// Package option reads the options of a Corefile stanza: a table from each option's name to
// the function that reads its arguments, the checks of their number that options share, and
// the TTL syntax of the stock etcd plugin. Both roles' options are read with it, and the TTL
// syntax also reads the ttl annotation (package source).
package option

import (
	"fmt"
	"strconv"
	"time"
)

// Func reads the arguments of the option opt into the configuration c.
type Func[C any] func(c C, opt string, args []string) error

// Table maps the options of a role to the function that reads each.
type Table[C any] map[string]Func[C]

// Parse reads the option opt into c; known is false, and c untouched, when the table does not
// hold opt.
func (t Table[C]) Parse(c C, opt string, args []string) (known bool, err error) {
	read, ok := t[opt]
	if !ok {
		return false, nil
	}
	return true, read(c, opt, args)
}

// One is the argument of an option that takes exactly one.
func One(opt string, args []string) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("%s needs exactly one argument", opt)
	}
	return args[0], nil
}

// Some are the arguments of an option that takes at least one.
func Some(opt string, args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("%s needs at least one argument", opt)
	}
	return args, nil
}

// None checks an option that takes no arguments.
func None(opt string, args []string) error {
	if len(args) != 0 {
		return fmt.Errorf("%s takes no arguments", opt)
	}
	return nil
}

// Flag is an option without arguments that turns something on.
func Flag[C any](set func(c C)) Func[C] {
	return func(c C, opt string, args []string) error {
		if err := None(opt, args); err != nil {
			return err
		}
		set(c)
		return nil
	}
}

// Word is an option of exactly one argument, which set checks and stores.
func Word[C any](set func(c C, v string) error) Func[C] {
	return func(c C, opt string, args []string) error {
		v, err := One(opt, args)
		if err != nil {
			return err
		}
		return set(c, v)
	}
}

// Words is an option of at least one argument, which set checks and stores.
func Words[C any](set func(c C, vs []string) error) Func[C] {
	return func(c C, opt string, args []string) error {
		vs, err := Some(opt, args)
		if err != nil {
			return err
		}
		return set(c, vs)
	}
}

// TTL reads a TTL given as seconds ("30") or a Go duration ("5m", cut to whole seconds), as
// the stock etcd plugin reads its TTL options, and checks that it lies in lo..hi: the one TTL
// syntax of gatewaydns, for the Corefile's options and the ttl annotation alike.
func TTL(s string, lo, hi uint32) (uint32, error) {
	var secs int64
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		secs = n
	} else if d, err := time.ParseDuration(s); err == nil {
		secs = int64(d / time.Second)
	} else {
		return 0, fmt.Errorf("%q is neither a number of seconds nor a duration: want seconds or a duration such as 30s, 5m, 1h", s)
	}
	if secs < int64(lo) || secs > int64(hi) {
		return 0, fmt.Errorf("%q is out of range: a TTL must be %d..%d seconds", s, lo, hi)
	}
	return uint32(secs), nil // #nosec G115 -- within lo..hi
}
