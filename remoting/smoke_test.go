package remoting

import (
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

type echoHandler struct{}

func (echoHandler) ServeRemoting(c *Conn, req *Command) *Command {
	r := NewResponse(req, Success, "")
	r.ExtFields = req.ExtFields
	r.Body = req.Body
	return r
}

func TestSmokeRoundTrip(t *testing.T) {
	addr := testutil.FreeAddr(t)
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
