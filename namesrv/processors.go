package namesrv

import (
	"fmt"
	"hash/crc32"
	"slices"
	"time"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
)

// versionV3_0_11 is MQVersion V3_0_11.ordinal(): brokers from this version on
// send a RegisterBrokerBody; older ones sent a bare TopicConfigSerializeWrapper.
const versionV3_0_11 = 37

// handlerFunc serves one request code.
type handlerFunc func(c *remoting.Conn, req *remoting.Command) *remoting.Command

// processors maps every request code the name server serves to its
// handler (DefaultRequestProcessor); docs/compatibility.md is generated
// from this table.
func (s *Server) processors() map[int32]handlerFunc {
	unitTopics := func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return s.unitTopicList(req) }
	return map[int32]handlerFunc{
		remoting.PutKVConfig:         func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return s.putKVConfig(req) },
		remoting.GetKVConfig:         func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return s.getKVConfig(req) },
		remoting.DeleteKVConfig:      func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return s.deleteKVConfig(req) },
		remoting.QueryDataVersion:    func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return s.queryDataVersion(req) },
		remoting.RegisterBroker:      s.registerBroker,
		remoting.UnregisterBroker:    func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return s.unregisterBroker(req) },
		remoting.GetRouteinfoByTopic: func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return s.getRouteInfoByTopic(req) },
		remoting.GetBrokerClusterInfo: func(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
			return ok(req, remoting.MarshalBody(s.routes.ClusterInfo()))
		},
		remoting.WipeWritePermOfBroker: func(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
			return s.changeWritePerm(req, false, s.routes.WipeWritePerm)
		},
		remoting.AddWritePermOfBroker: func(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
			return s.changeWritePerm(req, true, s.routes.AddWritePerm)
		},
		remoting.GetAllTopicListFromNameserver: func(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
			return ok(req, remoting.MarshalBody(remoting.TopicList{TopicList: s.routes.AllTopics()}))
		},
		remoting.DeleteTopicInNamesrv:   func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return s.deleteTopic(req) },
		remoting.RegisterTopicInNamesrv: func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return s.registerTopic(req) },
		remoting.GetKVListByNamespace:   func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return s.getKVList(req) },
		remoting.GetTopicsByCluster:     func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return s.getTopicsByCluster(req) },
		remoting.GetSystemTopicListFromNS: func(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
			topics, addr := s.routes.SystemTopics()
			return ok(req, remoting.MarshalBody(remoting.TopicList{TopicList: topics, BrokerAddr: addr}))
		},
		remoting.GetUnitTopicList:             unitTopics,
		remoting.GetHasUnitSubTopicList:       unitTopics,
		remoting.GetHasUnitSubUnunitTopicList: unitTopics,
		remoting.UpdateNamesrvConfig:          func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return s.updateNamesrvConfig(req) },
		remoting.GetNamesrvConfig:             func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return s.getNamesrvConfig(req) },
		remoting.GetBrokerMemberGroup:         func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return s.getBrokerMemberGroup(req) },
		remoting.BrokerHeartbeat:              s.brokerHeartbeat,
	}
}

// ServedCodes lists the request codes the name server has a handler for,
// in ascending order.
func (s *Server) ServedCodes() []int32 {
	codes := make([]int32, 0, len(s.handlers))
	for code := range s.handlers {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	return codes
}

// ServeRemoting implements remoting.Handler.
func (s *Server) ServeRemoting(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	if h := s.handlers[req.Code]; h != nil {
		return h(c, req)
	}
	if x := s.opts.Controller; x != nil && x.Serves(req.Code) {
		return x.ServeRemoting(c, req)
	}
	return remoting.NewResponse(req, remoting.RequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", req.Code))
}

func ok(req *remoting.Command, body []byte) *remoting.Command {
	r := remoting.NewResponse(req, remoting.Success, "")
	r.Body = body
	return r
}

func systemError(req *remoting.Command, err error) *remoting.Command {
	return remoting.NewResponse(req, remoting.SystemError, err.Error())
}

func (s *Server) putKVConfig(req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.PutKVConfigRequestHeader](req)
	if err != nil {
		return systemError(req, err)
	}
	// A failed write is logged by the store; like Java, the value is served anyway.
	_ = s.kv.Put(hd.Namespace, hd.Key, hd.Value)
	return ok(req, nil)
}

func (s *Server) getKVConfig(req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.KVConfigRequestHeader](req)
	if err != nil {
		return systemError(req, err)
	}
	ns, key := hd.Namespace, hd.Key
	v, found := s.kv.Get(ns, key)
	if !found {
		return remoting.NewResponse(req, remoting.QueryNotFound, "No config item, Namespace: "+ns+" Key: "+key)
	}
	r := ok(req, nil)
	(&remoting.GetKVConfigResponseHeader{Value: v}).Encode(r)
	return r
}

func (s *Server) deleteKVConfig(req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.KVConfigRequestHeader](req)
	if err != nil {
		return systemError(req, err)
	}
	_ = s.kv.Delete(hd.Namespace, hd.Key)
	return ok(req, nil)
}

func (s *Server) getKVList(req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.GetKVListByNamespaceRequestHeader](req)
	if err != nil {
		return systemError(req, err)
	}
	ns := hd.Namespace
	kv, found := s.kv.List(ns)
	if !found {
		return remoting.NewResponse(req, remoting.QueryNotFound, "No config item, Namespace: "+ns)
	}
	return ok(req, remoting.MarshalBody(remoting.KVTable{Table: kv}))
}

// orderTopicConfigBody is the REGISTER_BROKER reply body: the ORDER_TOPIC_CONFIG
// namespace as a KVTable, or nothing when that namespace was never written.
func (s *Server) orderTopicConfigBody() []byte {
	kv, found := s.kv.List(NamespaceOrderTopicConfig)
	if !found {
		return nil
	}
	return remoting.MarshalBody(remoting.KVTable{Table: kv})
}

func (s *Server) registerBroker(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.RegisterBrokerRequestHeader](req)
	if err != nil {
		return systemError(req, err)
	}
	reg := BrokerRegistration{
		BrokerName:   hd.BrokerName,
		BrokerAddr:   hd.BrokerAddr,
		ClusterName:  hd.ClusterName,
		HAServerAddr: hd.HAServerAddr,
		BrokerID:     hd.BrokerID,
	}
	compressed, crc, timeoutMs := hd.Compressed, hd.BodyCrc32, hd.HeartbeatTimeoutMillis
	// UtilAll.crc32 masks the sign bit; the header carries that int value.
	if crc != 0 && int64(crc32.ChecksumIEEE(req.Body)&0x7FFFFFFF) != crc {
		s.log.Warn().Str("brokerAddr", reg.BrokerAddr).Msg("register broker: crc32 not match")
		return remoting.NewResponse(req, remoting.SystemError, "crc32 not match")
	}
	if len(req.Body) > 0 {
		if req.Version >= versionV3_0_11 {
			body, err := decodeRegisterBody(req.Body, compressed)
			if err != nil {
				return systemError(req, err)
			}
			reg.Topics = &body.TopicConfigSerializeWrapper
			reg.FilterServerList = body.FilterServerList
			if reg.FilterServerList == nil {
				reg.FilterServerList = []string{}
			}
		} else {
			var w remoting.TopicConfigSerializeWrapper
			if err := fastjson.Unmarshal(req.Body, &w); err != nil {
				return systemError(req, fmt.Errorf("%w: %w", ErrRegisterBody, err))
			}
			reg.Topics = &w
		}
	}
	if timeoutMs > 0 {
		reg.Timeout = time.Duration(timeoutMs) * time.Millisecond
	}
	if c != nil {
		reg.ConnID = c.ID()
		s.brokerConns.Store(c.ID(), c)
	}
	reg.EnableActingMaster = hd.EnableActingMaster
	res := s.routes.RegisterBroker(reg)
	s.notifyMinBrokerIDChanges()
	if c != nil && c.Closed() {
		// The connection closed while we registered; its ConnClosed may have
		// run before the broker was recorded, so remove it here.
		s.brokerConns.Delete(c.ID())
		s.routes.ConnClosed(c.ID())
	}
	r := ok(req, s.orderTopicConfigBody())
	(&remoting.RegisterBrokerResponseHeader{MasterAddr: res.MasterAddr, HAServerAddr: res.HAServerAddr}).Encode(r)
	return r
}

func (s *Server) unregisterBroker(req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.BrokerIdentityRequestHeader](req)
	if err != nil {
		return systemError(req, err)
	}
	s.routes.UnregisterBroker(hd.ClusterName, hd.BrokerAddr, hd.BrokerName, hd.BrokerID)
	s.notifyMinBrokerIDChanges()
	return ok(req, nil)
}

func (s *Server) queryDataVersion(req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.BrokerIdentityRequestHeader](req)
	if err != nil {
		return systemError(req, err)
	}
	addr := hd.BrokerAddr
	var dv remoting.DataVersion
	if len(req.Body) == 0 {
		return remoting.NewResponse(req, remoting.SystemError, "namesrv: QUERY_DATA_VERSION without a DataVersion body")
	}
	if err := fastjson.Unmarshal(req.Body, &dv); err != nil {
		return systemError(req, fmt.Errorf("namesrv: bad DataVersion body: %w", err))
	}
	changed := s.routes.IsBrokerTopicConfigChanged(addr, dv)
	if !changed {
		s.routes.TouchBroker(addr)
	}
	r := ok(req, nil)
	if known, found := s.routes.BrokerDataVersion(addr); found {
		r.Body = remoting.MarshalBody(known)
	}
	(&remoting.QueryDataVersionResponseHeader{Changed: changed}).Encode(r)
	return r
}

func (s *Server) getRouteInfoByTopic(req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.GetRouteInfoRequestHeader](req)
	if err != nil {
		return systemError(req, err)
	}
	topic, standardOnly := hd.Topic, hd.AcceptStandardJSONOnly
	rd := s.routes.TopicRoute(topic)
	if rd == nil {
		return remoting.NewResponse(req, remoting.TopicNotExist, "No topic route info in name server for the topic: "+topic)
	}
	if s.config().OrderMessageEnable {
		rd.OrderTopicConf, _ = s.kv.Get(NamespaceOrderTopicConfig, topic)
	}
	return ok(req, encodeRoute(rd, standardOnly || req.Version >= versionV4_9_4))
}

func (s *Server) changeWritePerm(req *remoting.Command, add bool, f func(string) int) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.WritePermOfBrokerRequestHeader](req)
	if err != nil {
		return systemError(req, err)
	}
	name := hd.BrokerName
	n := f(name)
	s.log.Info().Str("brokerName", name).Int32("code", req.Code).Int("topics", n).Msg("broker write permission changed")
	r := ok(req, nil)
	if add {
		(&remoting.AddWritePermOfBrokerResponseHeader{AddTopicCount: int32(n)}).Encode(r)
	} else {
		(&remoting.WipeWritePermOfBrokerResponseHeader{WipeTopicCount: int32(n)}).Encode(r)
	}
	return r
}

func (s *Server) deleteTopic(req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.DeleteTopicFromNamesrvRequestHeader](req)
	if err != nil {
		return systemError(req, err)
	}
	s.routes.DeleteTopic(hd.Topic, hd.ClusterName)
	return ok(req, nil)
}

func (s *Server) registerTopic(req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.TopicRequestHeader](req)
	if err != nil {
		return systemError(req, err)
	}
	topic := hd.Topic
	var rd struct {
		QueueDatas []*remoting.QueueData `json:"queueDatas"`
	}
	if len(req.Body) == 0 {
		return remoting.NewResponse(req, remoting.SystemError, "namesrv: REGISTER_TOPIC_IN_NAMESRV without a TopicRouteData body")
	}
	if err := fastjson.Unmarshal(req.Body, &rd); err != nil {
		return systemError(req, fmt.Errorf("namesrv: bad TopicRouteData body: %w", err))
	}
	// Like Java, queue data naming an unknown broker is dropped with a warning
	// and the request still succeeds.
	if err := s.routes.RegisterTopic(topic, rd.QueueDatas); err != nil {
		s.log.Warn().Err(err).Msg("register topic")
	}
	return ok(req, nil)
}

func (s *Server) getTopicsByCluster(req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.GetTopicsByClusterRequestHeader](req)
	if err != nil {
		return systemError(req, err)
	}
	return ok(req, remoting.MarshalBody(remoting.TopicList{TopicList: s.routes.TopicsByCluster(hd.Cluster)}))
}
