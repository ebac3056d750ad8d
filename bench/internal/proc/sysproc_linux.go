package proc

import "syscall"

// sysProcAttr puts a Group child in a process group of its own; every
// child Linux ends with SIGTERM if the benchmark dies without stopping it
// (killed, or by SIGPIPE when its output is cut short), a Group child too:
// a chat instance left behind would keep its agents and its Redis
// subscriptions.
func sysProcAttr(group bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: group, Pdeathsig: syscall.SIGTERM}
}
