package grpcapi

import (
	"context"
	"errors"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"
	"github.com/rmqio/rmq/topicgroup"

	"github.com/rmqio/rmq/broker"
)

// The stock proxy in local mode (LocalTopicRouteService) answers QueryRoute
// and QueryAssignment from the name server's route of the topic, not from
// its own broker's topic table: every broker of the cluster that serves the
// topic is listed, each with a gRPC endpoint, so that a 5.x SDK spreads its
// sends over the brokers and sends each request for a queue to the
// endpoint of that queue's broker. It never learns another broker's real
// gRPC port: ProxyTopicRouteData(route, grpcServerPort) pairs each broker's
// remoting host with its own port, which holds when every broker of the
// cluster runs its endpoint on the same port, as a deployment of one broker
// per host does. rmq does the same with the port it listens on.
//
// What reaches this endpoint acts on this broker, whatever broker the
// request's queue names, as the local proxy's getBrokerAddr answers its own
// broker for every name: sends and receives use this broker's queues of the
// topic, acks and changes of invisible time go to this broker's pop service,
// and a handle this broker did not issue fails there as it does on stock.
//
// The routes are cached per topic as TopicRouteService's cache does:
// reloaded from the name server when older than routeRefresh (the proxy's
// topicRouteServiceCacheRefreshSeconds, 20 s), the old route kept when the
// reload fails, an entry not asked for in routeIdleExpiry (300 s) dropped,
// and at most routeCacheMax (20000) topics. A broker the name server expires
// (or that unregisters at shutdown) thus leaves the routes at the next
// reload, and the SDKs, which re-query routes every 30 s, stop using it.
//
// Two deliberate departures, both where stock has no useful answer: this
// broker's own queues come from its topic table, which is fresher than the
// name server's copy (a topic just created is routed before its
// registration lands); and a broker without a name server, or whose name
// servers cannot be reached before any route was cached, answers its own
// queues only, as rmq did before.
const (
	routeRefresh     = 20 * time.Second
	routeIdleExpiry  = 300 * time.Second
	routeCacheMax    = 20000
	routeLoadTimeout = 3 * time.Second
)

// routeEntry is one topic's cached name server route; rd is nil when the
// name server had none (the proxy caches that as WRAPPED_EMPTY_QUEUE).
type routeEntry struct {
	rd     *broker.TopicRoute
	loaded time.Time
	used   time.Time
}

type routeCache struct {
	mu sync.Mutex
	m  map[string]*routeEntry
}

func newRouteCache() *routeCache { return &routeCache{m: make(map[string]*routeEntry)} }

func (c *routeCache) get(topic string, now time.Time) (routeEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[topic]
	if !ok {
		return routeEntry{}, false
	}
	e.used = now
	return *e, true
}

func (c *routeCache) put(topic string, rd *broker.TopicRoute, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[topic]; !ok && len(c.m) >= routeCacheMax {
		for k, e := range c.m {
			if now.Sub(e.used) >= routeIdleExpiry {
				delete(c.m, k)
			}
		}
		for k := range c.m {
			if len(c.m) < routeCacheMax {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[topic] = &routeEntry{rd: rd, loaded: now, used: now}
}

// clusterRoute is the name server's route of topic, through the cache. A
// nil route with a nil error means "no cluster view": the caller answers
// this broker's queues only. ErrNoRoute means the name server has none.
func (s *Server) clusterRoute(ctx context.Context, topic string) (*broker.TopicRoute, error) {
	if bo := s.b.Options(); len(bo.NamesrvAddrs()) == 0 {
		return nil, nil
	}
	now := s.now()
	old, cached := s.routes.get(topic, now)
	if cached && now.Sub(old.loaded) < routeRefresh && now.Sub(old.used) < routeIdleExpiry {
		return cachedRoute(old.rd)
	}
	lctx, cancel := context.WithTimeout(ctx, routeLoadTimeout)
	rd, err := s.b.NamesrvRoute(lctx, topic)
	cancel()
	switch {
	case err == nil, errors.Is(err, broker.ErrNoRoute):
		if err == nil && (len(rd.Queues) == 0 || len(rd.Brokers) == 0) {
			rd = nil // TopicRouteService.isTopicRouteValid
		}
		s.routes.put(topic, rd, now)
		return cachedRoute(rd)
	case cached:
		// TopicRouteService reload: keep the old value when the reload fails.
		return cachedRoute(old.rd)
	default:
		s.b.WarnInternal(&s.log, "grpc_route_load_failed").Err(err).
			Str("topic", topic).Msg("grpc: topic route not loaded from the name server; answering this broker's queues only")
		return nil, nil
	}
}

func cachedRoute(rd *broker.TopicRoute) (*broker.TopicRoute, error) {
	if rd == nil {
		return nil, broker.ErrNoRoute
	}
	return rd, nil
}

// routeBroker is one broker instance of a route: its name, id and gRPC
// endpoint.
type routeBroker struct {
	name string
	id   int64
	ep   *v2.Endpoints
}

// routeGroup is one broker group's queues of the topic and its instances,
// id order (the proxy's HashMap of small Long keys iterates so).
type routeGroup struct {
	qd      broker.RouteQueue
	brokers []routeBroker
}

// routeGroups is the topic's route for the 5.x clients: the name server's
// queue data of every broker group, each with its instances' endpoints;
// this broker's group from tc (nil when this broker lacks the topic), with
// the broker's current id (in controller mode the controller's: 0 while
// master, which the SDKs send to). A nil rd gives this broker's group alone.
func (s *Server) routeGroups(rd *broker.TopicRoute, tc *topicgroup.TopicConfig) []routeGroup {
	bo := s.b.Options()
	var out []routeGroup
	local := func() {
		if tc != nil {
			out = append(out, routeGroup{
				qd:      broker.RouteQueue{BrokerName: bo.BrokerName, Perm: tc.Perm, ReadQueueNums: tc.ReadQueueNums, WriteQueueNums: tc.WriteQueueNums, TopicSysFlag: tc.TopicSysFlag},
				brokers: []routeBroker{{name: bo.BrokerName, id: s.b.BrokerID(), ep: s.endpoint()}},
			})
		}
	}
	if rd == nil {
		local()
		return out
	}
	addrs := make(map[string]map[int64]string, len(rd.Brokers))
	for _, bd := range rd.Brokers {
		addrs[bd.BrokerName] = bd.BrokerAddrs
	}
	sawLocal := false
	for _, qd := range rd.Queues {
		if qd.BrokerName == bo.BrokerName {
			if !sawLocal {
				sawLocal = true
				local()
			}
			continue
		}
		// RouteActivity stops at a queue datum without broker data; it is
		// skipped here (the name server never writes one).
		ids := addrs[qd.BrokerName]
		if len(ids) == 0 {
			continue
		}
		g := routeGroup{qd: qd}
		for _, id := range slices.Sorted(maps.Keys(ids)) {
			g.brokers = append(g.brokers, routeBroker{name: qd.BrokerName, id: id, ep: s.peerEndpoint(ids[id])})
		}
		out = append(out, g)
	}
	if !sawLocal {
		local()
	}
	return out
}

// peerEndpoint is another broker's gRPC endpoint: its remoting host and
// this endpoint's port (ProxyTopicRouteData(route, grpcServerPort)).
func (s *Server) peerEndpoint(brokerAddr string) *v2.Endpoints {
	host, _, err := net.SplitHostPort(brokerAddr)
	if err != nil {
		host = brokerAddr
	}
	scheme := v2.AddressScheme_IPv4
	if ip := net.ParseIP(host); ip == nil {
		scheme = v2.AddressScheme_DOMAIN_NAME
	} else if ip.To4() == nil {
		scheme = v2.AddressScheme_IPv6
	}
	return &v2.Endpoints{Scheme: scheme, Addresses: []*v2.Address{{Host: host, Port: int32(s.addr.Port())}}}
}
