package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
)

// ErrNoRoute is the name servers' TOPIC_NOT_EXIST: no broker routes the
// topic.
var ErrNoRoute = errors.New("broker: no topic route info in name server")

// ErrNoNamesrv says the broker has no name server to ask (namesrvAddr is
// empty).
var ErrNoNamesrv = errors.New("broker: no name server configured")

// TopicRoute is a topic's route as the name servers know it, in the
// broker's own terms, so that front ends (grpcapi) need not read the wire
// body (remoting.TopicRouteData) it is decoded from.
type TopicRoute struct {
	Queues  []RouteQueue
	Brokers []RouteBroker
}

// RouteQueue is one broker group's queues of the topic (QueueData).
type RouteQueue struct {
	BrokerName     string
	Perm           int32
	ReadQueueNums  int32
	WriteQueueNums int32
	TopicSysFlag   int32
}

// RouteBroker is one broker group: brokerId to address, 0 the master
// (BrokerData).
type RouteBroker struct {
	Cluster     string
	BrokerName  string
	BrokerAddrs map[int64]string
}

func topicRoute(rd *remoting.TopicRouteData) *TopicRoute {
	r := &TopicRoute{Queues: make([]RouteQueue, 0, len(rd.QueueDatas)), Brokers: make([]RouteBroker, 0, len(rd.BrokerDatas))}
	for _, q := range rd.QueueDatas {
		if q != nil {
			r.Queues = append(r.Queues, RouteQueue{BrokerName: q.BrokerName, Perm: q.Perm, ReadQueueNums: q.ReadQueueNums, WriteQueueNums: q.WriteQueueNums, TopicSysFlag: q.TopicSysFlag})
		}
	}
	for _, bd := range rd.BrokerDatas {
		if bd != nil {
			r.Brokers = append(r.Brokers, RouteBroker{Cluster: bd.Cluster, BrokerName: bd.BrokerName, BrokerAddrs: bd.BrokerAddrs})
		}
	}
	return r
}

// NamesrvRoute asks the name servers for topic's route
// (GET_ROUTEINFO_BY_TOPIC), the one after the other until one answers, over
// the connections the broker registers on. It is what the stock proxy's
// TopicRouteService loads: the cluster's brokers of the topic, this one and
// the others. A TOPIC_NOT_EXIST is ErrNoRoute.
func (b *Broker) NamesrvRoute(ctx context.Context, topic string) (*TopicRoute, error) {
	addrs := b.opts.NamesrvAddrs()
	if len(addrs) == 0 {
		return nil, ErrNoNamesrv
	}
	start := int(b.routeNext.Add(1))
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
			return topicRoute(&rd), nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}
