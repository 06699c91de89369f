//go:build unix

package main

import "syscall"

// ownGroup puts a child in its own process group: a terminal's ^C reaches
// the driver, which then stops its children in order instead of having them
// all die at once.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
