package harness

import (
	"errors"
	"fmt"
	"net"

	"github.com/rmqio/rmq/internal/testutil"
)

// ErrNoPorts is returned when no free port set was found.
var ErrNoPorts = errors.New("harness: no free ports found")

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago,
// below the ephemeral range (testutil.PickPort): a port the kernel hands out
// for :0 may be taken by any outgoing connection before the server binds it.
func FreePort() (int, error) {
	return testutil.PickPort()
}

// FreePorts returns a name server port NP and a broker port BP such that NP,
// BP, BP-2 (the broker's VIP channel) and BP+1 (the stock HA port, kept free
// so a broker that opens it does not collide) were all free on 127.0.0.1 and
// pairwise distinct. The listeners are closed before returning, so another
// process may still take a port; callers retry on bind errors if they care.
func FreePorts() (np, bp int, err error) {
	for attempt := 0; attempt < 64; attempt++ {
		held, ok := holdBrokerPorts()
		if !ok {
			continue
		}
		bp = held[0].Addr().(*net.TCPAddr).Port
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err == nil {
			np = l.Addr().(*net.TCPAddr).Port
			l.Close()
		}
		for _, h := range held {
			h.Close()
		}
		if err == nil {
			return np, bp, nil
		}
	}
	return 0, 0, ErrNoPorts
}

// holdBrokerPorts listens on a random port p and on p-2 and p+1; it reports
// false (holding nothing) when the neighbours are taken.
func holdBrokerPorts() ([]net.Listener, bool) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, false
	}
	p := l.Addr().(*net.TCPAddr).Port
	held := []net.Listener{l}
	for _, q := range []int{p - 2, p + 1} {
		if q < 1024 || q > 65535 {
			closeAll(held)
			return nil, false
		}
		n, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", q))
		if err != nil {
			closeAll(held)
			return nil, false
		}
		held = append(held, n)
	}
	return held, true
}

func closeAll(ls []net.Listener) {
	for _, l := range ls {
		l.Close()
	}
}
