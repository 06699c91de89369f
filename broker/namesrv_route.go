package broker

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
)

// ErrNoRoute is the name servers' TOPIC_NOT_EXIST: no broker routes the
// topic.
var ErrNoRoute = errors.New("broker: no topic route info in name server")

// ErrNoNamesrv says the broker has no name server to ask (namesrvAddr is
// empty).
var ErrNoNamesrv = errors.New("broker: no name server configured")

// routeNext rotates the first name server asked, as the client's
// MQClientAPIImpl picks one and moves on when it fails.
var routeNext atomic.Uint32

// NamesrvRoute asks the name servers for topic's route
// (GET_ROUTEINFO_BY_TOPIC), the one after the other until one answers, over
// the connections the broker registers on. It is what the stock proxy's
// TopicRouteService loads: the cluster's brokers of the topic, this one and
// the others. A TOPIC_NOT_EXIST is ErrNoRoute.
func (b *Broker) NamesrvRoute(ctx context.Context, topic string) (*remoting.TopicRouteData, error) {
	addrs := b.opts.NamesrvAddrs()
	if len(addrs) == 0 {
		return nil, ErrNoNamesrv
	}
	start := int(routeNext.Add(1))
	var last error
	for i := range addrs {
		addr := addrs[(start+i)%len(addrs)]
		req := remoting.NewRequest(remoting.GetRouteinfoByTopic, (&remoting.GetRouteInfoRequestHeader{Topic: topic}).Fields(), nil)
		resp, err := b.nsCli.Invoke(ctx, addr, req)
		switch {
		case err != nil:
			last = err
		case resp.Code == remoting.TopicNotExist:
			return nil, ErrNoRoute
		case resp.Code != remoting.Success:
			last = fmt.Errorf("broker: route of %s from %s: code %d, %s", topic, addr, resp.Code, resp.Remark)
		default:
			var rd remoting.TopicRouteData
			if err := fastjson.Unmarshal(resp.Body, &rd); err != nil {
				last = fmt.Errorf("broker: route of %s from %s: %w", topic, addr, err)
				continue
			}
			return &rd, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}
