package declared

import (
	"reflect"
	"testing"
)

func TestConstsListsEveryConstantOfTheTypeOnly(t *testing.T) {
	got, err := Consts("testdata/sample", "Color")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"blue", "green", "red"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Consts = %v, want %v", got, want)
	}
}

func TestMetricsListsEveryVectorWithItsFullNameAndLabels(t *testing.T) {
	got, err := Metrics("testdata/sample", map[string]string{"subsystem": "sample"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Metric{
		{Name: "ns_sample_hits_total", Type: "Counter", Labels: []string{"server", "color"}},
		{Name: "ns_took_seconds", Type: "Histogram", Labels: []string{"server"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Metrics = %+v, want %+v", got, want)
	}
}

// An identifier whose value the caller did not give makes the name unknown: an error, not a
// metric left out.
func TestMetricsFailsOnAnUnknownIdentifier(t *testing.T) {
	if got, err := Metrics("testdata/sample", nil); err == nil {
		t.Errorf("Metrics without the value of subsystem = %+v, want an error", got)
	}
}
