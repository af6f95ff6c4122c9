package xfr

import (
	"fmt"
	"testing"
)

// The key NOTIFYs are signed with: notify-key's, else the only one of the tsig plugin, else the
// first by name; none without tsig.
func TestNotifiesAreSignedWithTheKeyTheStanzaNames(t *testing.T) {
	secrets := map[string]string{"b.key.": "c2VjcmV0Qg==", "a.key.": "c2VjcmV0QQ=="}
	for _, tc := range []struct {
		key     string
		secrets map[string]string
		want    string
	}{
		{"", nil, " false <nil>"},
		{"", map[string]string{"b.key.": "x"}, "b.key. true <nil>"},
		{"", secrets, "a.key. true <nil>"},
		{"b.key.", secrets, "b.key. true <nil>"},
		{"c.key.", secrets, " false notify-key c.key.: the tsig plugin of the server block has no such key"},
	} {
		c := Config{NotifyKey: tc.key}
		name, _, ok, err := c.SigningKey(tc.secrets)
		if got := fmt.Sprintf("%s %v %v", name, ok, err); got != tc.want {
			t.Errorf("notify-key %q, keys %v: %s, want %s", tc.key, tc.secrets, got, tc.want)
		}
	}
}
