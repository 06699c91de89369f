// Package broker is a RocketMQ 4.x broker: request processors over the
// message store (package store), served by package remoting on ListenPort and
// the VIP port ListenPort-2.
//
// # Packages
//
// This package is the core and the wiring: the Broker type, Options,
// New/Start/Shutdown, the handler table, send (and the put hooks), pull and
// long polling, the topic table, delay levels and timer messages at the send
// side, offset/time queries, GET/UPDATE_BROKER_CONFIG and registration with
// the name servers. Each other concern is a subpackage it imports; they never
// import broker (each declares the small interface it needs and the core
// satisfies it) nor one another:
//
//	broker/clients       heartbeats, producer/consumer groups, consumer offsets,
//	                     subscription groups, queue locks and their requests
//	broker/transaction   half messages, END_TRANSACTION, check-back
//	broker/brokeradmin   topic admin, runtime info, QUERY_MESSAGE
//
// Handlers: coreProcessors (core_processors.go) plus each subpackage's
// Service.Processors, merged by registerHandlers; a code belongs to one set.
//
// # Request paths
//
//	SEND_MESSAGE(_V2) / SEND_BATCH_MESSAGE: the send pipeline (pipeline.go)
//	  header (V2 letters → V1 names) ─► admitSend (msgCheck: topic name,
//	  perms, auto-create from TBW102, queue id; size, message type) ─►
//	  %RETRY% limit → %DLQ% ─► putMessage (hooks) or the text mode ─► store
//	  ─► accountPut ─► msgId(s), queueId, queueOffset, MSG_REGION, TRACE_ON
//
//	SEND_REPLY_MESSAGE(_V2) (reply.go)
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
