package harness

import "syscall"

// procAttr kills the child when the test binary dies, so a crashed test run
// leaves no broker holding its ports.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
