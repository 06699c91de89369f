package broker

import (
	"rmq/internal/clock"
	"rmq/remoting"
)

// notifyConsumerIdsChanged tells every connection of group to rebalance now
// (NOTIFY_CONSUMER_IDS_CHANGED, oneway), unless the group's config turns the
// notification off.
func (b *Broker) notifyConsumerIdsChanged(group string, members []*remoting.Conn) {
	if len(members) == 0 {
		return
	}
	if cfg := b.subGroups.Find(group); cfg != nil && !cfg.NotifyConsumerIdsChangedEnable {
		return
	}
	for _, c := range members {
		req := remoting.NewRequest(remoting.NotifyConsumerIdsChanged, map[string]string{"consumerGroup": group}, nil)
		if err := c.Oneway(req); err != nil {
			b.log.Debug().Err(err).Str("group", group).Str("addr", c.RemoteAddr()).Msg("notify consumer ids changed")
		}
	}
}

// clientConnClosed drops a closed connection from every producer and consumer
// group and notifies the consumer groups it left.
func (b *Broker) clientConnClosed(c *remoting.Conn) {
	for group, members := range b.consumers.ConnClosed(c) {
		b.notifyConsumerIdsChanged(group, members)
	}
	b.producers.ConnClosed(c)
}

// startClientHousekeeping runs the channel expiry scan every
// clientScanInterval of the broker clock until stop closes; the loop counts
// in b.bg, so shutdown waits for it.
func (b *Broker) startClientHousekeeping(stop <-chan struct{}) {
	clk := b.clock
	if clk == nil {
		clk = clock.Real{}
	}
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		for {
			t := clk.NewTimer(clientScanInterval)
			select {
			case <-stop:
				t.Stop()
				return
			case <-t.C():
				b.scanClients()
			}
		}
	}()
}

// scanClients drops client channels that sent no heartbeat within the expiry,
// closes their connections and notifies the consumer groups they left.
func (b *Broker) scanClients() {
	expired, changed := b.consumers.ScanExpired()
	expired = append(expired, b.producers.ScanExpired()...)
	closed := make(map[*remoting.Conn]struct{}, len(expired))
	for _, c := range expired {
		if _, dup := closed[c]; dup {
			continue
		}
		closed[c] = struct{}{}
		b.log.Warn().Str("addr", c.RemoteAddr()).Msg("closing client connection: no heartbeat")
		c.Close()
	}
	for group, members := range changed {
		b.notifyConsumerIdsChanged(group, members)
	}
}
