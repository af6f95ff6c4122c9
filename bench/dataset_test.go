package main

import (
	"strings"
	"testing"
)

func TestDnsperfInputIsOneQuestionALine(t *testing.T) {
	qs := newDataset(1000).Queries(mixFull, 2)
	in := dnsperfInput(qs)
	if lines := strings.Split(strings.TrimSuffix(in, "\n"), "\n"); len(lines) != 2 || lines[0] != qs[0].Name+" "+qs[0].Type {
		t.Errorf("dnsperfInput = %q", in)
	}
}
