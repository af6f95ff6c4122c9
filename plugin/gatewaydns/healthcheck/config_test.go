package healthcheck

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		behaviour string
		lines     [][]string
		want      Config
		err       string
	}{
		{behaviour: "no option: the defaults", want: Config{}},
		{behaviour: "every option",
			lines: [][]string{{"healthcheck-interval", "1s"}, {"healthcheck-timeout", "300ms"}, {"healthcheck-down-after", "3"},
				{"healthcheck-up-after", "4"}, {"healthcheck-concurrency", "64"}, {"healthcheck-metrics", "10.0.0.0/8", "2001:db8::1", "192.0.2.7/24"}},
			want: Config{Interval: time.Second, Timeout: 300 * time.Millisecond, DownAfter: 3, UpAfter: 4, Concurrency: 64,
				MetricsFor: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::1/128"), netip.MustParsePrefix("192.0.2.0/24")}}},
		{behaviour: "an interval too short", lines: [][]string{{"healthcheck-interval", "10ms"}}, err: `healthcheck-interval "10ms": want a duration 50ms..1h0m0s`},
		{behaviour: "not a duration", lines: [][]string{{"healthcheck-timeout", "5"}}, err: `healthcheck-timeout "5"`},
		{behaviour: "a threshold of 0", lines: [][]string{{"healthcheck-down-after", "0"}}, err: "want a whole number 1..100"},
		{behaviour: "a concurrency that is no number", lines: [][]string{{"healthcheck-concurrency", "many"}}, err: "want a whole number 1..100000"},
		{behaviour: "a network that is none", lines: [][]string{{"healthcheck-metrics", "eu1"}}, err: `healthcheck-metrics: "eu1" is neither a network`},
		{behaviour: "two arguments to a one-argument option", lines: [][]string{{"healthcheck-interval", "1s", "2s"}}, err: "needs exactly one argument"},
		{behaviour: "a timeout longer than the interval", lines: [][]string{{"healthcheck-interval", "200ms"}, {"healthcheck-timeout", "300ms"}},
			err: "healthcheck-timeout 300ms is longer than healthcheck-interval 200ms"},
		{behaviour: "an interval shorter than the default timeout lowers the timeout with it",
			lines: [][]string{{"healthcheck-interval", "100ms"}}, want: Config{Interval: 100 * time.Millisecond}},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			var c Config
			var err error
			for _, l := range tc.lines {
				var known bool
				if known, err = Options.Parse(&c, l[0], l[1:]); !known {
					t.Fatalf("option %s unknown", l[0])
				}
				if err != nil {
					break
				}
			}
			if err == nil {
				err = c.Check()
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Interval != tc.want.Interval || c.Timeout != tc.want.Timeout || c.DownAfter != tc.want.DownAfter ||
				c.UpAfter != tc.want.UpAfter || c.Concurrency != tc.want.Concurrency || !slices.Equal(c.MetricsFor, tc.want.MetricsFor) {
				t.Fatalf("read %+v, want %+v", c, tc.want)
			}
			if d := c.withDefaults(); d.Timeout > d.Interval {
				t.Fatalf("with defaults: timeout %s > interval %s", d.Timeout, d.Interval)
			}
		})
	}
}

// TestDefaultsFailOverWithinTwoSeconds: the defaults take a target that stops answering out of
// the answers within 2 s of its last passing check, with room to spare for a late scheduler.
func TestDefaultsFailOverWithinTwoSeconds(t *testing.T) {
	d := Config{}.withDefaults()
	if d.Interval != DefaultInterval || d.Timeout != DefaultTimeout || d.DownAfter != DefaultDownAfter || d.UpAfter != DefaultUpAfter {
		t.Fatalf("defaults %+v", d)
	}
	if w := (Config{}).DownWithin(); w > 1500*time.Millisecond {
		t.Fatalf("down within %s with the defaults: no room left under 2 s", w)
	}
}
