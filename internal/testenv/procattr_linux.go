package testenv

import "syscall"

// sysProcAttr makes the kernel kill the child when the test binary dies
// (e.g. on a test timeout panic, where t.Cleanup does not run), so no etcd
// outlives its test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
