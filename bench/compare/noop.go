package main

import (
	"encoding/json"
	"strconv"
	"sync/atomic"

	"github.com/rmqio/rmq/remoting"
)

// noopQueues is the queue count of every topic the no-op server routes.
const noopQueues = 8

// noopServer is workload g's loopback ceiling: one rmq remoting server that
// is its own name server (every GET_ROUTEINFO_BY_TOPIC routes the topic to
// itself) and answers every send with a canned SEND_OK, storing nothing.
// Workload 1's load against it measures what the driver, the loopback and
// the remoting package allow at most.
type noopServer struct {
	srv *remoting.Server
	// addr is set once the listener is bound; workers read it (routes).
	addr   atomic.Pointer[string]
	offset atomic.Int64
	sends  atomic.Int64
}

// startNoop listens on a free loopback port.
func startNoop() (*noopServer, error) {
	n := &noopServer{}
	srv, err := remoting.NewServer(n, remoting.ServerOptions{Addrs: []string{"127.0.0.1:0"}})
	if err != nil {
		return nil, err
	}
	if err := srv.Start(); err != nil {
		return nil, err
	}
	addr := srv.Addrs()[0]
	n.srv = srv
	n.addr.Store(&addr)
	return n, nil
}

func (n *noopServer) stop() { n.srv.Stop() }

// address is the bound listen address.
func (n *noopServer) address() string { return *n.addr.Load() }

// ServeInline answers sends on the event loop, as the broker's hottest path
// does.
func (n *noopServer) ServeInline(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, bool) {
	if req.Code != remoting.SendMessageV2 && req.Code != remoting.SendMessage {
		return nil, false
	}
	return n.sendOK(req), true
}

// ServeRemoting answers route lookups and, should one arrive there, sends.
func (n *noopServer) ServeRemoting(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	switch req.Code {
	case remoting.SendMessageV2, remoting.SendMessage:
		return n.sendOK(req)
	case remoting.GetRouteinfoByTopic:
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.Body = noopRoute(n.address())
		return resp
	default:
		return remoting.NewResponse(req, remoting.RequestCodeNotSupported, "no-op server: request code "+strconv.Itoa(int(req.Code))+" not served")
	}
}

// sendOK is the canned answer: SEND_OK with the header fields a client
// reads (queueId echoes the request; field "e" in V2 headers).
func (n *noopServer) sendOK(req *remoting.Command) *remoting.Command {
	n.sends.Add(1)
	q := req.Ext()["e"]
	if req.Code == remoting.SendMessage {
		q = req.Ext()["queueId"]
	}
	if q == "" {
		q = "0"
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.ExtFields = map[string]string{
		"msgId":       "7F00000100002A9F0000000000000000",
		"queueId":     q,
		"queueOffset": strconv.FormatInt(n.offset.Add(1)-1, 10),
	}
	return resp
}

// noopRoute is a route of noopQueues queues on the broker at addr.
func noopRoute(addr string) []byte {
	rd := remoting.TopicRouteData{
		BrokerDatas:       []*remoting.BrokerData{{BrokerAddrs: map[int64]string{0: addr}, BrokerName: "noop", Cluster: "noop"}},
		FilterServerTable: map[string][]string{},
		QueueDatas:        []*remoting.QueueData{{BrokerName: "noop", Perm: 6, ReadQueueNums: noopQueues, WriteQueueNums: noopQueues}},
	}
	b, _ := json.Marshal(&rd)
	return b
}
