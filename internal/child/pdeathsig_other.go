//go:build !linux

package child

import "os/exec"

// DieWithParent does nothing where there is no Pdeathsig: Stop, or the caller's cleanup, ends
// the child.
func DieWithParent(*exec.Cmd) {}
