package gatewayproc

import "syscall"

// sysProcAttr has Linux end the gateway with SIGTERM if the benchmark dies
// without stopping it (killed, or by SIGPIPE when its output is cut short).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
