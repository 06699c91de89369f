package broker

import (
	"fmt"
	"net"
	"strconv"

	"github.com/rs/zerolog"

	"rmq/remoting"
	"rmq/store"
)

// HandlerFunc serves one request code. It returns the response, or nil when
// the request is parked (long polling) or needs no reply.
type HandlerFunc func(c *remoting.Conn, req *remoting.Command) *remoting.Command

// Broker is one broker node: request processors over a store.
type Broker struct {
	opts Options
	log  zerolog.Logger
	addr string // brokerIP1:listenPort, registered with the name server and written as STOREHOST

	store  *store.Store
	server *remoting.Server
	nsCli  *remoting.Client // to the name servers

	// core: topics, send, pull, long polling, registration (topic_config.go, send_processor.go, pull_*.go, register.go)
	topics   *TopicConfigManager
	pullHold *PullRequestHoldService

	// clients: heartbeats, groups, offsets, locks (client_*.go, consumer_*.go, offset_*.go, subscription_group.go, lock_manager.go)
	consumers *ConsumerManager
	producers *ProducerManager
	offsets   *ConsumerOffsetManager
	subGroups *SubscriptionGroupManager
	locks     *RebalanceLockManager

	handlers map[int32]HandlerFunc
}

// Addr is the broker's advertised "ip:port".
func (b *Broker) Addr() string { return b.addr }

// Store exposes the message store (tests, admin).
func (b *Broker) Store() *store.Store { return b.store }

// ServeRemoting implements remoting.Handler.
func (b *Broker) ServeRemoting(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	h := b.handlers[req.Code]
	if h == nil {
		return remoting.NewResponse(req, remoting.RequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", req.Code))
	}
	return h(c, req)
}

// ConnClosed implements remoting.ConnObserver.
func (b *Broker) ConnClosed(c *remoting.Conn) {
	b.clientConnClosed(c)
}

func (b *Broker) registerHandlers() {
	b.handlers = make(map[int32]HandlerFunc)
	for code, h := range b.coreProcessors() {
		b.handlers[code] = h
	}
	for code, h := range b.clientProcessors() {
		b.handlers[code] = h
	}
}

// errorResponse maps a header decode error to the stock reply.
func errorResponse(req *remoting.Command, err error) *remoting.Command {
	return remoting.NewResponse(req, remoting.SystemError, err.Error())
}

func joinHostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
