package proc

import "syscall"

// sysProcAttr puts a Group child in a process group of its own; any other
// child Linux ends with SIGTERM if the benchmark dies without stopping it
// (killed, or by SIGPIPE when its output is cut short).
func sysProcAttr(group bool) *syscall.SysProcAttr {
	if group {
		return &syscall.SysProcAttr{Setpgid: true}
	}
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
