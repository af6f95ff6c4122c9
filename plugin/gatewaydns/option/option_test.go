package option

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

type conf struct {
	flag  bool
	word  string
	words []string
}

var table = Table[*conf]{
	"flag":  Flag(func(c *conf) { c.flag = true }),
	"word":  Word(func(c *conf, v string) error { c.word = v; return nil }),
	"words": Words(func(c *conf, vs []string) error { c.words = vs; return nil }),
}

func TestTableReadsEachOptionWithItsFunc(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opt       string
		args      []string
		wantKnown bool
		wantErr   string
		want      conf
	}{
		{name: "a flag without arguments turns on", opt: "flag", wantKnown: true, want: conf{flag: true}},
		{name: "a flag with an argument is refused", opt: "flag", args: []string{"yes"}, wantKnown: true, wantErr: "flag takes no arguments"},
		{name: "a word takes one argument", opt: "word", args: []string{"a"}, wantKnown: true, want: conf{word: "a"}},
		{name: "a word without its argument is refused", opt: "word", wantKnown: true, wantErr: "word needs exactly one argument"},
		{name: "a word with two arguments is refused", opt: "word", args: []string{"a", "b"}, wantKnown: true, wantErr: "word needs exactly one argument"},
		{name: "words take several arguments", opt: "words", args: []string{"a", "b"}, wantKnown: true, want: conf{words: []string{"a", "b"}}},
		{name: "words without an argument are refused", opt: "words", wantKnown: true, wantErr: "words needs at least one argument"},
		{name: "an option the table does not hold is unknown and sets nothing", opt: "other", args: []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c conf
			known, err := table.Parse(&c, tc.opt, tc.args)
			if known != tc.wantKnown {
				t.Errorf("known %v, want %v", known, tc.wantKnown)
			}
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.flag != tc.want.flag || c.word != tc.want.word || !slices.Equal(c.words, tc.want.words) {
				t.Errorf("read %+v, want %+v", c, tc.want)
			}
		})
	}
}

func TestTTLTakesSecondsOrADuration(t *testing.T) {
	for in, want := range map[string]uint32{"30": 30, "30s": 30, "5m": 300, "2h30m": 9000, "0": 0, "4294967295": 4294967295} {
		if got, err := TTL(in, 0, math.MaxUint32); err != nil || got != want {
			t.Errorf("TTL(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1s", "1e30h", "4294967296", " 30"} {
		if _, err := TTL(in, 0, math.MaxUint32); err == nil {
			t.Errorf("TTL(%q) should fail", in)
		}
	}
}

// The bounds are the caller's: an SOA timer of 0, a negative TTL longer than CoreDNS gives the
// SOA, an annotation past RFC 2181's 2^31-1 are refused, and the error says the range.
func TestTTLKeepsToTheCallersBounds(t *testing.T) {
	for _, tc := range []struct {
		in     string
		lo, hi uint32
		want   string // "" for no error
	}{
		{"1", 1, 10, ""},
		{"10s", 1, 10, ""},
		{"0", 1, 10, `"0" is out of range: a TTL must be 1..10 seconds`},
		{"999ms", 1, 10, `"999ms" is out of range: a TTL must be 1..10 seconds`},
		{"11", 1, 10, `"11" is out of range: a TTL must be 1..10 seconds`},
		{"-5", 1, 10, `"-5" is out of range: a TTL must be 1..10 seconds`},
		{"soon", 1, 10, `"soon" is neither a number of seconds nor a duration: want seconds or a duration such as 30s, 5m, 1h`},
	} {
		_, err := TTL(tc.in, tc.lo, tc.hi)
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
			t.Errorf("TTL(%q, %d, %d): error %v, want %q", tc.in, tc.lo, tc.hi, err, tc.want)
		}
	}
}
