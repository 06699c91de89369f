//go:build unix

package remoting

import "syscall"

// listenerName returns the local address of fd, a duplicate of a listening
// socket from gnet's DupListener, and closes fd.
func listenerName(fd int) (syscall.Sockaddr, error) {
	defer syscall.Close(fd)
	return syscall.Getsockname(fd)
}
