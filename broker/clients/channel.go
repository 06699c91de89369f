package clients

import (
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
)

// Client-side broker state (J4 broker/client, offset, subscription and
// rebalance packages):
//
//	HEART_BEAT ──► ConsumerManager   group → {conn → ClientChannel}, topic → SubscriptionData
//	           └─► ProducerManager   group → {conn → ClientChannel}, clientId → conn
//	              SubscriptionGroupManager  group → SubscriptionGroupConfig  (config/subscriptionGroup.json)
//	              ConsumerOffsetManager     "topic@group" → queueId → offset (config/consumerOffset.json)
//	              RebalanceLockManager      group → MessageQueue → (clientId, last renewal)
//
// The managers never touch the network: they return the connections a caller
// must notify or close, so they can be driven by an injected clock in tests.

// Timings of the stock broker.
const (
	// channelExpiredTimeout: a client channel with no heartbeat for this long
	// is dropped and closed (ConsumerManager/ProducerManager CHANNEL_EXPIRED_TIMEOUT).
	channelExpiredTimeout = 120 * time.Second
	// clientScanInterval is the period of the expiry scan (ClientHousekeepingService).
	clientScanInterval = 10 * time.Second
	// lockMaxLiveTime: an orderly-consumer queue lock not renewed for this long
	// may be taken by another client (rocketmq.broker.rebalance.lockMaxLiveTime).
	lockMaxLiveTime = 60 * time.Second
)

// ClientChannel is one client connection as a member of a producer or
// consumer group, as recorded from its heartbeats.
type ClientChannel struct {
	Conn       *remoting.Conn
	ClientID   string
	Language   string // request language enum name, e.g. "JAVA", "GO"
	Version    int32  // MQVersion ordinal the client sent
	LastUpdate time.Time
}

func (ch *ClientChannel) connection() *remoting.Connection {
	return &remoting.Connection{
		ClientAddr: ch.Conn.RemoteAddr(),
		ClientID:   ch.ClientID,
		Language:   ch.Language,
		Version:    ch.Version,
	}
}

// orReal is clk, or the wall clock when clk is nil.
func orReal(clk clock.Clock) clock.Clock {
	if clk == nil {
		return clock.Real{}
	}
	return clk
}
