package record

import (
	"cmp"
	"slices"
	"testing"
)

// claimOf is one record to the rule: its part and its age.
type claimOf struct {
	part   Part
	age    int64
	target string
}

func TestRuleCNAME(t *testing.T) {
	tests := []struct {
		behaviour string
		claims    []claimOf
		kept      []int // positions Keeps
		answered  []int // positions Answered
	}{
		{"addresses alone are kept", []claimOf{{Data, 5, ""}, {Data, 3, ""}}, []int{0, 1}, []int{0, 1}},
		{"one CNAME alone is kept", []claimOf{{Alias, 5, "a"}}, []int{0}, []int{0}},
		{"the older CNAME keeps the name: the younger data goes",
			[]claimOf{{Data, 9, ""}, {Alias, 5, "a"}}, []int{1}, []int{1}},
		{"older data keeps the name: every CNAME goes",
			[]claimOf{{Alias, 9, "a"}, {Data, 5, ""}, {Alias, 7, "b"}}, []int{1}, []int{1}},
		{"equal ages (one transaction): the data wins",
			[]claimOf{{Alias, 5, "a"}, {Data, 5, ""}}, []int{1}, []int{1}},
		{"of two CNAMEs the older, whatever the order",
			[]claimOf{{Alias, 9, "a"}, {Alias, 5, "b"}}, []int{1}, []int{1}},
		{"of two CNAMEs of one age the first",
			[]claimOf{{Alias, 5, "a"}, {Alias, 5, "b"}}, []int{0}, []int{0}},
		{"a younger CNAME to the same target is answered by the older one's record",
			[]claimOf{{Alias, 9, "a"}, {Alias, 5, "a"}}, []int{1}, []int{0, 1}},
		{"records beside are kept whoever wins",
			[]claimOf{{Beside, 1, ""}, {Alias, 5, "a"}, {Data, 9, ""}}, []int{0, 1}, []int{0, 1}},
		{"records out are left out, even when nothing else clashes",
			[]claimOf{{Out, 1, "s"}, {Data, 9, ""}}, []int{1}, []int{1}},
		{"a not yet written record is the youngest",
			[]claimOf{{Alias, 1 << 62, "a"}, {Data, 9, ""}}, []int{1}, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.behaviour, func(t *testing.T) {
			c := tt.claims
			part := func(i int) Part { return c[i].part }
			r := RuleCNAME(len(c), part, func(i, j int) int { return cmp.Compare(c[i].age, c[j].age) })
			var kept, answered []int
			for i := range c {
				if r.Keeps(i, part(i)) {
					kept = append(kept, i)
				}
				if r.Answered(i, part(i), func(i, j int) bool { return c[i].target == c[j].target }) {
					answered = append(answered, i)
				}
			}
			if !slices.Equal(kept, tt.kept) || !slices.Equal(answered, tt.answered) {
				t.Fatalf("kept %v answered %v, want %v and %v (ruling %+v)", kept, answered, tt.kept, tt.answered, r)
			}
			if want := len(kept) < len(c); r.LeavesOut != want {
				t.Fatalf("LeavesOut %v, want %v", r.LeavesOut, want)
			}
		})
	}
}

func TestPartOf(t *testing.T) {
	tests := []struct {
		behaviour   string
		q           Question
		k           AnswerKind
		onlyTargets bool
		want        Part
	}{
		{"an address is data to an A question", AddressQuestion, Address, false, Data},
		{"an address takes no part in a TXT answer", TextQuestion, Address, false, Beside},
		{"text takes no part in an A answer", AddressQuestion, Text, false, Beside},
		{"text is data to a TXT question", TextQuestion, Text, false, Data},
		{"a CNAME is an alias to both", TextQuestion, CNAME, false, Alias},
		{"an SRV target beside other data is left out", AddressQuestion, Target, false, Out},
		{"SRV targets alone answer as CNAMEs, as the stock plugin", TextQuestion, Target, true, Alias},
	}
	for _, tt := range tests {
		if got := PartOf(tt.q, tt.k, tt.onlyTargets); got != tt.want {
			t.Errorf("%s: PartOf = %v, want %v", tt.behaviour, got, tt.want)
		}
	}
}
