package child

import (
	"os/exec"
	"syscall"
)

// DieWithParent has the kernel send cmd SIGKILL when the thread that starts it ends (Pdeathsig):
// the caller keeps that thread locked (runtime.LockOSThread) until cmd has exited, as Start does.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
