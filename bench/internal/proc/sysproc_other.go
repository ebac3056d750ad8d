//go:build !linux

package proc

import "syscall"

// sysProcAttr puts a Group child in a process group of its own; there is
// nothing to add for any other child outside Linux.
func sysProcAttr(group bool) *syscall.SysProcAttr {
	if group {
		return &syscall.SysProcAttr{Setpgid: true}
	}
	return nil
}
