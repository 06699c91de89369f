// Package broker is a RocketMQ 4.x broker: request processors over the
// message store (package store), served by package remoting on ListenPort and
// the VIP port ListenPort-2.
//
// # Where things are
//
// This package is the core and the wiring. Each file is one concern; the
// long ones open with a map of their parts:
//
//	doc.go             this map, the request paths, the pull body, registration
//	broker.go          the Broker, dispatch (ServeRemoting), the core's handler
//	                   table, access control (plain ACL, ACL 2.0), the stats
//	                   requests, accessors for metrics and the console
//	send.go            every way a message enters the store: the send pipeline,
//	                   SEND_MESSAGE(_V2)/batch, delay levels, send-back,
//	                   request-reply, Put for grpcapi
//	pull.go            PULL_MESSAGE, its filter, long polling, offset queries
//	topics.go          the topic table (topics.json), LMQ, name-server routes
//	timer.go           timer messages at the send side, RECALL_MESSAGE
//	delivery.go        for the delay/timer/transaction/POP services: NextDue,
//	                   clock control (broker/clockctl's target), retention
//	lifecycle.go       New (in stages), Start, Shutdown, the store's callbacks
//	options.go         Options and their broker.conf keys
//	runtime_config.go  GET/UPDATE_BROKER_CONFIG, the live options
//	stock_keys.go      stock keys accepted, kept and printed
//	register.go        registration with the name servers
//	role.go            master and slave roles, what a slave syncs
//	ha.go, ha_status.go     replication (HA service, GET_BROKER_HA_STATUS)
//	acting_master.go   slave-acting-master and the escape bridge
//	fastfail.go        back-pressure (BrokerFastFailure, busy page cache)
//	admin_codes.go     admin requests the core answers
//	served_codes.go    the codes the broker serves
//
// Each other concern is a subpackage it imports; they never import broker
// (each declares the small interface it needs, and the core passes a value
// serving it: lifecycle.go openServices) nor one another:
//
//	broker/clients       heartbeats, producer/consumer groups, consumer offsets,
//	                     subscription groups, queue locks and their requests
//	broker/transaction   half messages, END_TRANSACTION, check-back
//	broker/pop           POP consumption (POP/ACK/CHANGE_INVISIBLE, revive)
//	broker/brokeradmin   topic admin, runtime info, QUERY_MESSAGE
//	broker/brokerstats   per-topic and per-group stats and metrics figures
//	broker/clockctl      clock control: the message clock stepped ahead through
//	                     every due time (FastForward, CLOCK_FAST_FORWARD)
//
// Handlers: coreProcessors (broker.go) plus each subpackage's
// Service.Processors, merged by registerHandlers; a code belongs to one set.
//
// # Request paths
//
//	SEND_MESSAGE(_V2) / SEND_BATCH_MESSAGE: the send pipeline (send.go)
//	  header (V2 letters → V1 names) ─► admitSend (msgCheck: topic name,
//	  perms, auto-create from TBW102, queue id; size, message type) ─►
//	  %RETRY% limit → %DLQ% ─► putMessage (hooks) or the text mode ─► store
//	  ─► accountPut ─► msgId(s), queueId, queueOffset, MSG_REGION, TRACE_ON
//
//	SEND_REPLY_MESSAGE(_V2) (send.go)
//	  header ─► admitSend ─► PUSH_REPLY_MESSAGE_TO_CLIENT to REPLY_TO_CLIENT's
//	  connection ─► store (storeReplyMessageEnable) ─► SUCCESS / SYSTEM_ERROR
//
//	PULL_MESSAGE / LITE_PULL_MESSAGE
//	  group, topic, queue checks ─► tag filter (request or heartbeat
//	  subscription) ─► store.GetMessage ─► code per status ─┬─► answer
//	                                                        └─► 19 + SUSPEND: park
//
// # Back-pressure
//
// Requests served inline on the event loop never wait. Pooled sends, pulls,
// heartbeats and end-transactions run on a lane each (remoting/lanes.go,
// sized by the stock executor keys) and wait in its FIFO when its workers
// are busy; every 10 ms the stock BrokerFastFailure sweep answers those that
// waited too long SYSTEM_BUSY, and a busy page cache (a put holding the
// lock past osPageCacheBusyTimeOutMills) refuses sends (fastfail.go).
//
// # Long polling
//
// A parked pull sits in one waiter list per queue and in a deadline heap.
// The store's dispatch calls notify for every message it indexes; the hold
// goroutine sleeps until the earliest deadline. Either way the pull is
// re-run once (without suspend) and answered through Conn.WriteResponse.
//
//	 store dispatch ──notify(topic,qid,maxOffset,tagsCode)──┐
//	                                                        ▼
//	+----------------------------+      +-------------------------------+
//	| queues: topic/qid → [held] |◄────►| byDue: min-heap of deadlines  |
//	+----------------------------+      +-------------------------------+
//	          │ maxOffset > offset && tag matches      │ deadline passed
//	          └───────────────► wakePull ◄─────────────┘
//
// # Pull response body
//
// The body is the stored records of the commitlog, concatenated unchanged
// (message.EncodeRecord's v1 layout); a client walks it by TOTALSIZE:
//
//	+-----------+------------+-----+-----------+------------+-----+
//	| TOTALSIZE | record 1 … |     | TOTALSIZE | record n … |     |
//	+-----------+------------+-----+-----------+------------+-----+
//	 At most min(maxMsgNums, 32) records and 256 KiB, always at least one.
//
// # Registration
//
// REGISTER_BROKER goes to every name server at Start, every
// registerNameServerPeriod and soon after a topic changes (requests coalesce).
// Its body is RegisterBrokerBody JSON; bodyCrc32 is CRC32(body) & 0x7FFFFFFF:
//
//	{"filterServerList":[],
//	 "topicConfigSerializeWrapper":{"dataVersion":{"counter":n,"timestamp":ms},
//	                                "topicConfigTable":{"T":{TopicConfig},…}}}
//
// The same wrapper, pretty-printed, is config/topics.json. consumerOffset.json
// and subscriptionGroup.json sit beside it (package clients).
package broker
