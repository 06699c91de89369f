package clients

import (
	"github.com/rmqio/rmq/remoting"
)

// notifyConsumerIdsChanged tells every connection of group to rebalance now
// (NOTIFY_CONSUMER_IDS_CHANGED, oneway) after a heartbeat or an unregister
// changed it, unless the broker's notifyConsumerIdsChangedEnable or the
// group's config turns the notification off (stock ClientManageProcessor
// passes the group's flag to ConsumerManager).
func (s *Service) notifyConsumerIdsChanged(group string, members []*remoting.Conn) {
	if cfg := s.SubGroups.Find(group); cfg != nil && !cfg.NotifyConsumerIdsChangedEnable {
		return
	}
	s.sendConsumerIdsChanged(group, members)
}

// sendConsumerIdsChanged notifies members of group unless the broker's
// notifyConsumerIdsChangedEnable is off (stock DefaultConsumerIdsChangeListener):
// a closed connection's groups are notified this way, whatever the group's
// own flag, as stock ConsumerManager.doChannelCloseEvent.
func (s *Service) sendConsumerIdsChanged(group string, members []*remoting.Conn) {
	if len(members) == 0 || !s.notifyEnabled() {
		return
	}
	for _, c := range members {
		req := remoting.NewRequest(remoting.NotifyConsumerIdsChanged, (&remoting.NotifyConsumerIdsChangedRequestHeader{ConsumerGroup: group}).Fields(), nil)
		if err := c.Oneway(req); err != nil {
			s.log.Debug().Err(err).Str("group", group).Object("client", c).Msg("notify consumer ids changed")
		}
	}
}

// ConnClosed drops a closed connection from every producer and consumer
// group and notifies the consumer groups it left.
func (s *Service) ConnClosed(c *remoting.Conn) {
	for group, members := range s.Consumers.ConnClosed(c) {
		s.sendConsumerIdsChanged(group, members)
	}
	s.Producers.ConnClosed(c)
}

// Housekeep runs the channel expiry scan every clientScanInterval of the
// service clock until stop closes (ClientHousekeepingService). It blocks; the
// broker runs it on a goroutine it waits for at shutdown.
func (s *Service) Housekeep(stop <-chan struct{}) {
	for {
		t := s.clock.NewTimer(clientScanInterval)
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C():
			s.scanClients()
		}
	}
}

// scanClients drops client channels that sent no heartbeat within the expiry,
// closes their connections and notifies the consumer groups they left.
func (s *Service) scanClients() {
	expired, changed := s.Consumers.ScanExpired()
	expired = append(expired, s.Producers.ScanExpired()...)
	closed := make(map[*remoting.Conn]struct{}, len(expired))
	for _, c := range expired {
		if _, dup := closed[c]; dup {
			continue
		}
		closed[c] = struct{}{}
		s.log.Warn().Object("client", c).Msg("closing client connection: no heartbeat")
		c.Close()
	}
	for group, members := range changed {
		s.notifyConsumerIdsChanged(group, members)
	}
}
