package main

import "syscall"

// ownGroup starts a child in a new process group, so that a console's ^C
// reaches the driver only, which then stops its children in order.
func ownGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}
