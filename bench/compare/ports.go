package main

import (
	"errors"
	"fmt"
	"net"
)

var errNoPorts = errors.New("compare: no free loopback port triple found")

// portFree reports whether port can be bound on 127.0.0.1 right now.
func portFree(port int) bool {
	if port <= 0 || port > 65535 {
		return false
	}
	l, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// freePort returns a port the kernel just handed out on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// brokerPorts returns a listen port p whose companions are free too: a broker
// also binds p-2 (the VIP channel) and p+1 (the HA port of the Java broker).
func brokerPorts() (int, error) {
	for range 50 {
		p, err := freePort()
		if err != nil {
			return 0, err
		}
		if portFree(p-2) && portFree(p+1) {
			return p, nil
		}
	}
	return 0, errNoPorts
}
