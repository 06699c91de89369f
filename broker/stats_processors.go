package broker

import (
	"encoding/json"
	"fmt"

	"github.com/rmqio/rmq/broker/brokerstats"
	"github.com/rmqio/rmq/broker/clients"
	"github.com/rmqio/rmq/remoting"
)

// statsProcessors maps the requests served from the broker stats
// (brokerstats.Manager) and the client tables: mqadmin statsAll,
// brokerConsumeStats and producer, rocketmq-exporter and the dashboard.
func (b *Broker) statsProcessors() map[int32]HandlerFunc {
	return map[int32]HandlerFunc{
		remoting.ViewBrokerStatsData:   b.processViewBrokerStatsData,
		remoting.GetBrokerConsumeStats: b.processGetBrokerConsumeStats,
		remoting.GetAllProducerInfo:    b.processGetAllProducerInfo,
	}
}

// BrokerStats exposes the per-topic and per-group stats (metrics, console).
func (b *Broker) BrokerStats() *brokerstats.Manager { return b.bstats }

// processViewBrokerStatsData serves VIEW_BROKER_STATS_DATA: the minute, hour
// and day windows of one stats item (J4 AdminBrokerProcessor.ViewBrokerStatsData).
func (b *Broker) processViewBrokerStatsData(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.ViewBrokerStatsDataRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	name, key := hd.StatsName, hd.StatsKey
	var it *brokerstats.Item
	if set := b.bstats.Set(name); set != nil {
		it = set.LookupText(key)
	}
	if it == nil {
		return remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("The stats <%s> <%s> not exist", name, key))
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = brokerstats.BrokerStatsData(it)
	return resp
}

// processGetBrokerConsumeStats serves GET_BROKER_CONSUME_STATS (mqadmin
// brokerConsumeStats): every group's ConsumeStats, in a ConsumeStatsList.
func (b *Broker) processGetBrokerConsumeStats(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	// isOrder is a Boolean that cannot fail to decode.
	hd, _ := remoting.DecodeHeader[remoting.GetConsumeStatsInBrokerHeader](req)
	isOrder := hd.IsOrder
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = b.clients.BrokerConsumeStats(b.Addr(), isOrder, b.bstats.GroupGetTps)
	return resp
}

// processGetAllProducerInfo serves GET_ALL_PRODUCER_INFO (mqadmin producer,
// rocketmq-exporter): a ProducerTableInfo {"data":{group:[ProducerInfo]}}.
func (b *Broker) processGetAllProducerInfo(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	body, err := json.Marshal(struct {
		Data map[string][]clients.ProducerInfo `json:"data"`
	}{b.clients.Producers.Table()})
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = body
	return resp
}
