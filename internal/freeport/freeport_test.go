package freeport

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestAPortIsHandedOutOnceWithinAProcess(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		ports, err := Take(2)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				t.Fatalf("port %d is not free for TCP: %v", p, err)
			}
			l.Close()
		}
	}
}

// A child process taking ports while this one holds some never gets one of them.
func TestAPortIsHandedOutOnceAcrossProcesses(t *testing.T) {
	if os.Getenv("FREEPORT_CHILD") != "" {
		ports, err := Take(100)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		for _, p := range ports {
			fmt.Println(p)
		}
		os.Exit(0)
	}
	mine, err := Take(100)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestAPortIsHandedOutOnceAcrossProcesses$")
	cmd.Env = append(os.Environ(), "FREEPORT_CHILD=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	lines := strings.Fields(string(out))
	if len(lines) != 100 {
		t.Fatalf("child printed %d ports, want 100: %s", len(lines), out)
	}
	for _, l := range lines {
		p, err := strconv.Atoi(l)
		if err != nil {
			t.Fatalf("child printed %q", l)
		}
		if slices.Contains(mine, p) {
			t.Fatalf("port %d handed to both processes", p)
		}
	}
}
