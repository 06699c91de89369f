package namesrv

import (
	"bytes"
	"maps"
	"slices"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
)

// versionV4_9_4 is MQVersion.Version.V4_9_4.ordinal(): from this client version
// on, and whenever acceptStandardJsonOnly=true, the Java name server writes the
// route with BrowserCompatible, i.e. brokerAddrs keys as quoted strings.
const versionV4_9_4 = 401

// encodeRoute writes a TopicRouteData compactly, fields in fastjson's
// alphabetical order, brokerAddrs always an object and queueDatas always an
// array. standard=false writes brokerAddrs keys bare ({0:"ip:port"}), which is
// what the Java name server sends to clients older than 4.9.4; the Go client's
// hand-rolled brokerAddrs parser strips quotes and accepts both.
func encodeRoute(rd *remoting.TopicRouteData, standard bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"brokerDatas":[`)
	for i, bd := range rd.BrokerDatas {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"brokerAddrs":{`)
		for j, id := range slices.Sorted(maps.Keys(bd.BrokerAddrs)) {
			if j > 0 {
				b.WriteByte(',')
			}
			var key [24]byte
			b.Write(fastjson.AppendIntKey(key[:0], id, standard))
			b.WriteByte(':')
			b.Write(remoting.MarshalBody(bd.BrokerAddrs[id]))
		}
		b.WriteString(`},"brokerName":`)
		b.Write(remoting.MarshalBody(bd.BrokerName))
		b.WriteString(`,"cluster":`)
		b.Write(remoting.MarshalBody(bd.Cluster))
		b.WriteByte('}')
	}
	b.WriteString(`],"filterServerTable":`)
	fst := rd.FilterServerTable
	if fst == nil {
		fst = map[string][]string{}
	}
	b.Write(remoting.MarshalBody(fst))
	if rd.OrderTopicConf != "" {
		b.WriteString(`,"orderTopicConf":`)
		b.Write(remoting.MarshalBody(rd.OrderTopicConf))
	}
	b.WriteString(`,"queueDatas":`)
	qds := rd.QueueDatas
	if qds == nil {
		qds = []*remoting.QueueData{}
	}
	b.Write(remoting.MarshalBody(qds))
	b.WriteByte('}')
	return b.Bytes()
}
