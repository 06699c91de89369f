package remoting

import "syscall"

// listenerName returns the local address of fd, a duplicate of a listening
// socket from gnet's DupListener (a handle from DuplicateHandle), and
// closes fd.
func listenerName(fd int) (syscall.Sockaddr, error) {
	h := syscall.Handle(fd)
	defer syscall.CloseHandle(h)
	return syscall.Getsockname(h)
}
