package remoting

import (
	"net"
	"testing"
	"time"
)

type echoHandler struct{}

func (echoHandler) ServeRemoting(c *Conn, req *Command) *Command {
	r := NewResponse(req, Success, "")
	r.ExtFields = req.ExtFields
	r.Body = req.Body
	return r
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestSmokeRoundTrip(t *testing.T) {
	addr := freeAddr(t)
	s, err := NewServer(echoHandler{}, ServerOptions{Addrs: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	cl := NewClient(ClientOptions{})
	defer cl.Close()
	for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
		req := NewRequest(105, map[string]string{"topic": "T\x01\x02"}, []byte("body"))
		req.SerializeType = st
		resp, err := cl.InvokeTimeout(addr, req, 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ExtFields["topic"] != "T\x01\x02" || string(resp.Body) != "body" || resp.SerializeType != st {
			t.Fatalf("bad echo %v", resp)
		}
	}
}
