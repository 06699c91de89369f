package namesrv

import (
	"maps"
	"slices"
	"strings"

	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// Slave-acting-master (5.3.3 RIP-32, docs/cn/SlaveActingMasterMode.md) on
// the name server's side:
//
//   - a broker registers with enableActingMaster (5.x; a 4.x broker sends
//     none and is never a prime slave) and a heartbeatTimeoutMillis of its
//     own (brokerNotActiveTimeoutMillis, 10 s), and heartbeats with
//     BROKER_HEARTBEAT (904) in between, which renews its registration;
//   - GET_BROKER_MEMBER_GROUP (901) answers a group's live members, from
//     which a broker learns the least id of its group every second;
//   - with notifyMinBrokerIdChanged, when a group's least id changes (its
//     master expired or unregistered, or came back), the name server tells
//     the brokers of the group at once with NOTIFY_MIN_BROKER_ID_CHANGE
//     (905, oneway): the remaining ones when a member left, the others when
//     one of lower id joined (RouteInfoManager.chooseBrokerAddrsToNotify);
//   - while the master is gone its queues lose write permission, and with
//     supportActingMaster the route lists the slave of least id as id 0,
//     a read-only master (pickupTopicRouteData).

// MinBrokerIDChange is one NOTIFY_MIN_BROKER_ID_CHANGE to send: Header to
// every address of Notify.
type MinBrokerIDChange struct {
	BrokerName string
	Header     remoting.NotifyMinBrokerIDChangeRequestHeader
	Notify     []string
}

func minID(addrs map[int64]string) (int64, bool) {
	if len(addrs) == 0 {
		return 0, false
	}
	return slices.Min(slices.Collect(maps.Keys(addrs))), true
}

// SetActingMaster sets supportActingMaster and notifyMinBrokerIdChanged.
func (m *RouteInfoManager) SetActingMaster(support, notify bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.supportActingMaster, m.notifyMinID = support, notify
}

// groupReducedLocked follows the removal of offlineAddr from a group that
// still has members (unRegisterBroker, cleanTopicByUnRegisterRequests):
// without a master, an acting-master group's queues lose write permission,
// and when the removed member had the least id the rest are told.
func (m *RouteInfoManager) groupReducedLocked(brokerName, offlineAddr string, wasMin bool) {
	bd := m.brokerAddrTable[brokerName]
	if bd == nil || !m.actingMaster[brokerName] {
		return
	}
	if id, ok := minID(bd.BrokerAddrs); ok && id > MasterID {
		for _, qds := range m.topicQueueTable {
			if qd := qds[brokerName]; qd != nil {
				qd.Perm &^= topicgroup.PermWrite
			}
		}
	}
	if wasMin {
		m.minIDChangedLocked(brokerName, offlineAddr, "")
	}
}

// minIDChangedLocked queues the notification of a group whose least id
// changed, when notifyMinBrokerIdChanged is on.
func (m *RouteInfoManager) minIDChangedLocked(brokerName, offlineAddr, haAddr string) {
	bd := m.brokerAddrTable[brokerName]
	if !m.notifyMinID || bd == nil {
		return
	}
	id, ok := minID(bd.BrokerAddrs)
	if !ok {
		return
	}
	c := MinBrokerIDChange{BrokerName: brokerName, Header: remoting.NotifyMinBrokerIDChangeRequestHeader{
		MinBrokerID: &id, MinBrokerAddr: bd.BrokerAddrs[id], OfflineBrokerAddr: offlineAddr, HABrokerAddr: haAddr,
	}}
	for _, bid := range slices.Sorted(maps.Keys(bd.BrokerAddrs)) {
		// A member left (or the group has one): everyone left is told.
		// One of lower id joined: everyone but it.
		if offlineAddr != "" || len(bd.BrokerAddrs) == 1 || bid != id {
			c.Notify = append(c.Notify, bd.BrokerAddrs[bid])
		}
	}
	m.minIDChanges = append(m.minIDChanges, c)
}

// TakeMinBrokerIDChanges returns and forgets the notifications waiting to
// be sent.
func (m *RouteInfoManager) TakeMinBrokerIDChanges() []MinBrokerIDChange {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.minIDChanges
	m.minIDChanges = nil
	return c
}

// MemberGroup returns a group's live members (GET_BROKER_MEMBER_GROUP); an
// unknown group has none.
func (m *RouteInfoManager) MemberGroup(cluster, brokerName string) *remoting.BrokerMemberGroup {
	g := &remoting.BrokerMemberGroup{Cluster: cluster, BrokerName: brokerName, BrokerAddrs: map[int64]string{}}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if bd := m.brokerAddrTable[brokerName]; bd != nil {
		maps.Copy(g.BrokerAddrs, bd.BrokerAddrs)
	}
	return g
}

// actingMasterRoute lists, in a copied route, the member of least id of
// every acting-master group without a master as id 0, where the group's
// queues are read-only (pickupTopicRouteData with supportActingMaster).
func actingMasterRoute(topic string, rd *remoting.TopicRouteData, acting map[string]bool) {
	if strings.HasPrefix(topic, topicgroup.SyncBrokerMemberTopicPrefix) { // a group syncs its members through it
		return
	}
	for _, bd := range rd.BrokerDatas {
		if len(bd.BrokerAddrs) == 0 || !acting[bd.BrokerName] {
			continue
		}
		if _, ok := bd.BrokerAddrs[MasterID]; ok {
			continue
		}
		for _, qd := range rd.QueueDatas {
			if qd.BrokerName != bd.BrokerName {
				continue
			}
			if qd.Perm&topicgroup.PermWrite == 0 {
				id, _ := minID(bd.BrokerAddrs)
				bd.BrokerAddrs[MasterID] = bd.BrokerAddrs[id]
				delete(bd.BrokerAddrs, id)
			}
			break
		}
	}
}

// notifyMinBrokerIDChanges sends the waiting notifications, oneway, off the
// request's goroutine: a broker that does not answer the dial delays no
// registration.
func (s *Server) notifyMinBrokerIDChanges() {
	changes := s.routes.TakeMinBrokerIDChanges()
	if len(changes) == 0 || s.notifier == nil {
		return
	}
	go func() {
		for _, c := range changes {
			s.log.Info().Str("brokerName", c.BrokerName).Int64("minBrokerId", *c.Header.MinBrokerID).
				Str("offline", c.Header.OfflineBrokerAddr).Strs("notify", c.Notify).Msg("min broker id changed")
			for _, addr := range c.Notify {
				req := remoting.NewRequest(remoting.NotifyMinBrokerIDChange, c.Header.Fields(), nil)
				if err := s.notifier.Oneway(addr, req); err != nil {
					s.log.Warn().Err(err).Str("broker", addr).Msg("notify min broker id change")
				}
			}
		}
	}()
}

// getBrokerMemberGroup answers GET_BROKER_MEMBER_GROUP (901).
func (s *Server) getBrokerMemberGroup(req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.GetBrokerMemberGroupRequestHeader](req)
	if err != nil {
		return systemError(req, err)
	}
	body := remoting.GetBrokerMemberGroupResponseBody{BrokerMemberGroup: s.routes.MemberGroup(hd.ClusterName, hd.BrokerName)}
	return ok(req, body.Encode())
}

// brokerHeartbeat serves BROKER_HEARTBEAT (904). A broker in acting-master
// mode sends it to the name server without a brokerId
// (BrokerOuterAPI.sendHeartbeat) and it renews the broker's registration
// (updateBrokerInfoUpdateTimestamp). A broker in controller mode sends it
// with its brokerId to the controller, which with enableControllerInNamesrv
// shares this port: stock registers the controller's processor for 904
// over the name server's, so that an acting-master heartbeat there is
// refused; rmq tells the two apart by the brokerId and keeps both.
func (s *Server) brokerHeartbeat(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.BrokerHeartbeatRequestHeader](req)
	if err != nil {
		return systemError(req, err)
	}
	if x := s.opts.Controller; x != nil && hd.BrokerID != nil && x.Serves(req.Code) {
		return x.ServeRemoting(c, req)
	}
	s.routes.TouchBroker(hd.BrokerAddr)
	return ok(req, nil)
}
