//go:build !linux

package child

import "os/exec"

// dieWithParent does nothing where there is no Pdeathsig: Stop, or the harness's cleanup, ends
// the child.
func dieWithParent(*exec.Cmd) {}
