package alerting

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs the scenarios side by side whatever the machine's cores: each is a few mostly
// idle processes following a schedule of minutes, so running two at a time (go test's default
// on two cores) would only add their lengths up.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.parallel"); f != nil && !isSet("test.parallel") {
		_ = f.Value.Set("8")
	}
	os.Exit(m.Run())
}

func isSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
