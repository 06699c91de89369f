package main

// codeNote is the hand-kept part of a request code's row in
// docs/compatibility.md: what rmq does when more than "served" needs saying,
// where it differs from the stock server, and the tests that cover it.
type codeNote struct {
	does, diff, tests string
}

// codeNotes are keyed by request code; TestCompatibilityDoc fails on a note
// for a code neither server serves. Test paths are relative to the
// repository root; "Java:" names a JUnit class in
// integration/java/src/test/java/rmq/it/, "Go integration:" a test in
// integration/.
var codeNotes = map[int32]codeNote{
	10: { // SEND_MESSAGE
		tests: "`broker/send_core_test.go`, `broker/send_inline_test.go`; Java: `SendReceiveTest`",
	},
	11: { // PULL_MESSAGE
		does:  "served (long polling)",
		tests: "`broker/pull_core_test.go`, `broker/pull_hold_core_test.go`; Java: `SendReceiveTest`, `LitePullTest`",
	},
	12: { // QUERY_MESSAGE
		does:  "served (key index; `_UNIQUE_KEY_QUERY`)",
		tests: "`broker/brokeradmin/query_message_test.go`; Java: `QueryAndViewTest`, `MessageTraceTest` (queryMsgTraceById)",
	},
	14: { // QUERY_CONSUMER_OFFSET
		tests: "`broker/query_core_test.go`",
	},
	15: { // UPDATE_CONSUMER_OFFSET
		tests: "`broker/clients/processors_test.go`",
	},
	17: { // UPDATE_AND_CREATE_TOPIC
		does:  "served; the 5.x `attributes` header (`+message.type=FIFO`, `-message.type`; 5.x `mqadmin updateTopic -a`) as 5.3.3 applies it, see \"5.x topic attributes\" below",
		diff:  "A 4.x client sends no attributes and gets the 4.x behaviour; `queue.type`, `cleanup.policy` and `reserve.time` are refused as unsupported keys",
		tests: "`broker/brokeradmin/topic_test.go`, `broker/message_type_test.go`; Java: `MQAdminTest`, `Client5TopicAttributeTest`",
	},
	21: { // GET_ALL_TOPIC_CONFIG
		tests: "`broker/brokeradmin/topic_test.go`",
	},
	25: { // UPDATE_BROKER_CONFIG
		does:  "served: every key but the black list (`brokerConfigPath`, `rocketmqHome`, `configBlackList` and its `;` list → NO_PERMISSION `Can not update config in black list.`) is kept, reported by GET and written to the `-c` file; the Live column of the stock-keys table says which act at once; an empty body is SUCCESS",
		diff:  "A value a start would refuse, and an unknown key (named with the closest known one), refuse the whole body with SYSTEM_ERROR (Java drops the one and ignores the other); changed keys are written to the `-c` file line by line (Java rewrites the whole file)",
		tests: "`broker/runtime_config_test.go`, `broker/config_update_all_test.go`, `broker/runtime_retention_test.go`",
	},
	26: { // GET_BROKER_CONFIG
		tests: "`broker/runtime_config_test.go`, `broker/config_update_all_test.go`",
	},
	28: { // GET_BROKER_RUNTIME_INFO
		diff:  "rmq adds its replication state, which stock keeps out of the table (4.9.8 logs slaveFallBehindMuch, 5.x serves GET_BROKER_HA_STATUS): `brokerRole`, `brokerId`, on a master `haConnectionCount`, `haPush2SlaveMaxOffset`, `haSlaveFallBehindMuch`, `haSlaveAckOffset_<addr>`, `haSlaveDiff_<addr>`, on a slave `haMasterAddress`, `haMasterConnected`, `haReportedOffset`; in controller mode `brokerRole`/`brokerId` as the controller gave them, `haMasterEpoch`, `haMasterBrokerId`, `haConfirmOffset`, on the master `haSyncStateSet`, `haSyncStateSetEpoch`; and 5.3.3's `brokerActive` (false on a slave)",
		tests: "`broker/timer_test.go`, `broker/ha_runtime_test.go`, `metrics/ctl_test.go`, `admin/admin_test.go`; Java: `MQAdminTest`",
	},
	29: { // SEARCH_OFFSET_BY_TIMESTAMP
		tests: "`broker/query_core_test.go`",
	},
	30: { // GET_MAX_OFFSET
		tests: "`broker/query_core_test.go`",
	},
	31: { // GET_MIN_OFFSET
		tests: "`broker/query_core_test.go`",
	},
	32: { // GET_EARLIEST_MSG_STORETIME
		tests: "`broker/query_core_test.go`",
	},
	33: { // VIEW_MESSAGE_BY_ID
		tests: "`broker/query_core_test.go`; Java: `QueryAndViewTest`",
	},
	34: { // HEART_BEAT
		tests: "`broker/clients/processors_test.go`",
	},
	35: { // UNREGISTER_CLIENT
		tests: "`broker/clients/processors_test.go`",
	},
	36: { // CONSUMER_SEND_MSG_BACK
		tests: "`broker/delay_test.go`; Java: `RetryDlqTest`",
	},
	37: { // END_TRANSACTION
		diff:  "A duplicate or late end is harmless",
		tests: "`broker/transaction/broker_test.go`; Java: `TransactionTest`",
	},
	38: { // GET_CONSUMER_LIST_BY_GROUP
		tests: "`broker/clients/processors_test.go`",
	},
	41: { // LOCK_BATCH_MQ
		tests: "`broker/clients/processors_test.go`; Java: `OrderlyTest`",
	},
	42: { // UNLOCK_BATCH_MQ
		tests: "`broker/clients/processors_test.go`",
	},
	43: { // GET_ALL_CONSUMER_OFFSET
		tests: "`broker/clients/processors_test.go`",
	},
	45: { // GET_ALL_DELAY_OFFSET
		does:  "served: `{\"offsetTable\":{1:n,...}}`, one entry per delay level",
		tests: "`broker/admin_codes_test.go`",
	},
	46: { // CHECK_CLIENT_CONFIG
		does:  "served: a TAG expression SUCCESS; another type with `enablePropertyFilter=false` (the default) SYSTEM_ERROR `The broker does not support consumer to filter message by <type>`; an SQL92 expression that does not compile SUBSCRIPTION_PARSE_FAILED with the compiler's message",
		diff:  "Expressions past the parser's limits (65 536 bytes, 256 levels) are refused with a remark naming the limit",
		tests: "`broker/clients/processors_test.go`, `broker/filter_limits_test.go`, `broker/pull_sql_test.go`; Go integration: `TestSQL92BadExpression`; Java: `SqlFilterTest`",
	},
	60: { // GET_TIMER_CHECK_POINT
		does:  "served (a 5.x code): TimerCheckpoint's 56 bytes from the timer store's durable checkpoint (read time, timer-log flush position, timer-queue offset as both queue offsets, data version 0/time written/sequence); a slave answers its master's copied read time, queue offset and version; SYSTEM_ERROR `The checkpoint is null` with `timerWheelEnable=false`. A slave copies it every 3 s and, once replicated that far, does not deliver again on taking over what the master had delivered",
		tests: "`timer/stock_test.go`, `timer/master_test.go`, `broker/timer_test.go`; Go integration: `integration/ha` `TestTimerStateMixedPairs`",
	},
	61: { // GET_TIMER_METRICS
		does:  "served (a 5.x code): TimerMetricsSerializeWrapper JSON, the timer messages in the wheel by real topic with a data version; a slave copies it in SlaveSynchronize when the version differs; SYSTEM_ERROR `The timer message store is null` with `timerWheelEnable=false`",
		tests: "`timer/stock_test.go`, `timer/master_test.go`, `broker/timer_test.go`; Go integration: `integration/ha` `TestTimerStateMixedPairs`",
	},
	50: { // UPDATE_AND_CREATE_ACL_CONFIG
		does:  "served (`aclEnable=true`): creates or updates the account in `plain_acl.yml` (kept fields the header leaves out, account moved last, `dataVersion` bumped), file replaced atomically; refused: UPDATE_AND_CREATE_ACL_CONFIG_FAILED (209) with the stock message",
		diff:  "With ACL off stock answers 209 with a null remark (a NullPointerException), rmq with a sentence",
		tests: "`acl/manager_test.go`, `cmd/rmq/admin_acl_test.go`; Java: `AclTest` (mqadmin updateAclConfig)",
	},
	51: { // DELETE_ACL_CONFIG
		does:  "served: DELETE_ACL_CONFIG_FAILED (210) `The accesskey[..] corresponding to accessConfig has been deleted failed.` for an unknown key",
		diff:  "as 50",
		tests: "`acl/manager_test.go`, `cmd/rmq/admin_acl_test.go`; Java: `AclTest` (mqadmin deleteAclConfig)",
	},
	52: { // GET_BROKER_CLUSTER_ACL_INFO
		does:  "served: header `version`, `allAclFileVersion` (one file), broker name, address, cluster",
		diff:  "With ACL off stock never answers (a swallowed NullPointerException); rmq answers SYSTEM_ERROR",
		tests: "`acl/manager_test.go`, `cmd/rmq/admin_acl_test.go`; Java: `AclTest` (mqadmin clusterAclConfigVersion)",
	},
	53: { // UPDATE_GLOBAL_WHITE_ADDRS_CONFIG
		does:  "served: replaces `globalWhiteRemoteAddresses`; `aclFileFullPath` is required (stock too) and must be the broker's file; otherwise UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED (211)",
		diff:  "Addresses that do not load are refused before the file is written (stock writes them)",
		tests: "`acl/manager_test.go`, `cmd/rmq/admin_acl_test.go`; Go integration: `TestACLWithGoClientCredentials`",
	},
	100: { // PUT_KV_CONFIG
		tests: "`namesrv/server_test.go`",
	},
	101: { // GET_KV_CONFIG
		tests: "`namesrv/server_test.go`",
	},
	102: { // DELETE_KV_CONFIG
		tests: "`namesrv/server_test.go`",
	},
	103: { // REGISTER_BROKER
		tests: "`namesrv/server_test.go`, `integration/namesrvclient/client_compat_test.go`",
	},
	104: { // UNREGISTER_BROKER
		tests: "`namesrv/server_test.go`",
	},
	105: { // GET_ROUTEINFO_BY_TOPIC
		tests: "`namesrv/server_test.go`, `namesrv/route_json_test.go`",
	},
	106: { // GET_BROKER_CLUSTER_INFO
		tests: "`namesrv/server_test.go`",
	},
	200: { // UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
		tests: "`broker/clients/processors_test.go`; Java: `MQAdminTest`",
	},
	201: { // GET_ALL_SUBSCRIPTIONGROUP_CONFIG
		tests: "`broker/clients/processors_test.go`",
	},
	202: { // GET_TOPIC_STATS_INFO
		tests: "`broker/brokeradmin/topic_test.go`; Java: `MQAdminTest`",
	},
	203: { // GET_CONSUMER_CONNECTION_LIST
		tests: "`broker/clients/processors_test.go`; Java: `MQAdminTest`",
	},
	204: { // GET_PRODUCER_CONNECTION_LIST
		tests: "`broker/clients/processors_test.go`",
	},
	205: { // WIPE_WRITE_PERM_OF_BROKER
		tests: "`namesrv/server_test.go`",
	},
	206: { // GET_ALL_TOPIC_LIST_FROM_NAMESERVER
		tests: "`namesrv/server_test.go`",
	},
	207: { // DELETE_SUBSCRIPTIONGROUP
		tests: "`broker/clients/processors_test.go`; Java: `MQAdminTest`",
	},
	208: { // GET_CONSUME_STATS
		tests: "`broker/clients/store_test.go`; Java: `MQAdminTest`, `OffsetAdminTest`",
	},
	215: { // DELETE_TOPIC_IN_BROKER
		tests: "`broker/brokeradmin/topic_test.go`; Java: `MQAdminTest`",
	},
	216: { // DELETE_TOPIC_IN_NAMESRV
		tests: "`namesrv/server_test.go`",
	},
	219: { // GET_KVLIST_BY_NAMESPACE
		tests: "`namesrv/server_test.go`",
	},
	222: { // INVOKE_BROKER_TO_RESET_OFFSET
		does:  "served: per write queue the offset at the timestamp (-1: the queue's end; before the first message: its first; after the last: the last message, as `getOffsetInQueueByTime`), taken if `isForce` or behind the group; RESET_CONSUMER_CLIENT_OFFSET (220) oneway to every client (the C++ list body for a CPP-language request); body `ResetOffsetBody`. Unknown topic / group without offsets: SYSTEM_ERROR; no client online: CONSUMER_NOT_ONLINE (mqadmin then resets the old way)",
		diff:  "Like 5.x `useServerSideResetOffset`, the broker's own offsets are set to the table too (4.9.8 leaves them to the client)",
		tests: "`broker/clients/offset_admin_test.go`, `cmd/rmq/admin_codes_cmd_test.go`; Java: `OffsetAdminTest` (online: the client consumes again; offline: fallback)",
	},
	223: { // INVOKE_BROKER_TO_GET_CONSUMER_STATUS
		does:  "served: GET_CONSUMER_STATUS_FROM_CLIENT (221, 5 s) to each client or only `clientAddr`; body `{consumerTable}`; none online: SYSTEM_ERROR",
		diff:  "An unknown group gets the \"no consumer online\" SYSTEM_ERROR, not a NullPointerException's",
		tests: "`broker/clients/offset_admin_test.go`; Java: `OffsetAdminTest` (DefaultMQAdminExt.getConsumeStatus)",
	},
	224: { // GET_TOPICS_BY_CLUSTER
		tests: "`namesrv/server_test.go`",
	},
	300: { // QUERY_TOPIC_CONSUME_BY_WHO
		tests: "`broker/clients/processors_test.go`",
	},
	303: { // QUERY_CONSUME_TIME_SPAN
		does:  "served: one `QueueTimeSpan` per write queue",
		tests: "`broker/clients/offset_admin_test.go`",
	},
	304: { // GET_SYSTEM_TOPIC_LIST_FROM_NS
		tests: "`namesrv/server_test.go`",
	},
	305: { // GET_SYSTEM_TOPIC_LIST_FROM_BROKER
		does:  "served: the built-in system topics plus the broker's own (cluster, broker name, reply topic, trace topic)",
		tests: "`broker/admin_codes_test.go`",
	},
	306: { // CLEAN_EXPIRED_CONSUMEQUEUE
		does:  "served: destroys the consume queues wholly below the commitlog's minimum offset (the delay topic's are kept, as stock); SUCCESS",
		tests: "`broker/retention_test.go` (`TestRetentionAdminRequests`), `cmd/rmq/admin_json_test.go`",
	},
	307: { // GET_CONSUMER_RUNNING_INFO
		does:  "served (forwarded to the client)",
		tests: "`broker/clients/processors_test.go`; Java: `OffsetAdminTest` (consumerStatus -i)",
	},
	308: { // QUERY_CORRECTION_OFFSET
		diff:  "Stock deletes the `filterGroups`' offsets from its table while answering; rmq only skips them",
		tests: "`broker/clients/offset_admin_test.go`",
	},
	309: { // CONSUME_MESSAGE_DIRECTLY
		does:  "served (forwarded to the client)",
		tests: "`broker/clients/store_test.go`",
	},
	310: { // SEND_MESSAGE_V2
		tests: "`broker/send_core_test.go`, `broker/send_header_test.go`; Java: `SendReceiveTest`, `SerializeTypeTest`",
	},
	311: { // GET_UNIT_TOPIC_LIST
		does:  "served: topics whose first queue data has the UNIT flag",
		diff:  "\"First\" is the lowest broker name (stock: hash order)",
		tests: "`namesrv/config_codes_test.go`",
	},
	312: { // GET_HAS_UNIT_SUB_TOPIC_LIST
		does:  "served: UNIT_SUB flag",
		diff:  "as 311",
		tests: "`namesrv/config_codes_test.go`",
	},
	313: { // GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST
		does:  "served: UNIT_SUB without UNIT",
		diff:  "as 311",
		tests: "`namesrv/config_codes_test.go`",
	},
	314: { // CLONE_GROUP_OFFSET
		diff:  "A blank topic clones every topic of the source group (stock clones nothing then)",
		tests: "`broker/clients/offset_admin_test.go`, `cmd/rmq/admin_codes_cmd_test.go`; Java: `OffsetAdminTest`",
	},
	315: { // VIEW_BROKER_STATS_DATA
		does:  "served: the minute, hour and day windows of one stats item (`statsName`, `statsKey`); an unknown item SYSTEM_ERROR `The stats <name> <key> not exist`",
		tests: "`broker/stats_processors_test.go`, `cmd/rmq/admin_stats_cmd_test.go`; Java: `MQAdminStatsTest` (mqadmin statsAll)",
	},
	316: { // CLEAN_UNUSED_TOPIC
		does:  "served: deletes the consume queues of topics not in the topic table",
		diff:  "Besides the schedule and op-half topics, keeps the half and timer-wheel topics",
		tests: "`broker/admin_codes_test.go`",
	},
	317: { // GET_BROKER_CONSUME_STATS
		does:  "served: every group's ConsumeStats in a ConsumeStatsList",
		tests: "`broker/stats_processors_test.go`, `cmd/rmq/admin_stats_cmd_test.go`; Java: `MQAdminStatsTest` (mqadmin brokerConsumeStats)",
	},
	318: { // UPDATE_NAMESRV_CONFIG
		does:  "served: properties body; `configBlackList`, `configStorePath`, `kvConfigPath`, `rocketmqHome` → NO_PERMISSION `Can not update config in black list.`; unknown keys ignored",
		diff:  "Changed keys are written to `configStorePath` (the `-c` file, as stock) line by line (stock rewrites the whole file), so the next start reads them; without `-c` they last until the name server stops; `orderMessageEnable` takes effect at once, `listenPort` is only reported (nothing re-binds, as stock)",
		tests: "`namesrv/config_codes_test.go`, `cmd/rmq/namesrv_persist_test.go`, `cmd/rmq/admin_codes_cmd_test.go`; Java: `OffsetAdminTest` (`namesrvConfig`)",
	},
	319: { // GET_NAMESRV_CONFIG
		does:  "served: every config key as `key=value` lines",
		diff:  "rmq's keys, not the JVM's `NamesrvConfig` + `NettyServerConfig` field set",
		tests: "as 318",
	},
	320: { // SEND_BATCH_MESSAGE
		tests: "`broker/send_inline_test.go`; Java: `SendReceiveTest`",
	},
	321: { // QUERY_CONSUME_QUEUE
		does:  "served: units from `index`, `count` at most; with `consumerGroup` its subscription (or `<g>@<t> is not online!`); no such queue: SYSTEM_ERROR; index past the end: SUCCESS without body and the stock remark",
		diff:  "No consume-queue extension file: no unit has `extendDataJson`, `bitMap` or `eval`",
		tests: "`broker/clients/offset_admin_test.go`; Java: `OffsetAdminTest` (queryCq)",
	},
	322: { // QUERY_DATA_VERSION
		tests: "`namesrv/server_test.go`",
	},
	323: { // RESUME_CHECK_HALF_MESSAGE
		tests: "`broker/transaction/broker_test.go`",
	},
	324: { // SEND_REPLY_MESSAGE
		does:  "served: pushes the reply to the requester with PUSH_REPLY_MESSAGE_TO_CLIENT (326), then stores it on the reply topic when `storeReplyMessageEnable` (default true). Push OK: SUCCESS, msgId `0` (or the stored id); requester gone: SYSTEM_ERROR `push reply message fail, channel of <id> not found.`; no REPLY_TO_CLIENT: SYSTEM_ERROR",
		diff:  "The requester is looked up among producer heartbeats (stock) and, before its first heartbeat, as the connection its request came on: the Go client's `Request` heartbeats at once only for a topic the name server does not know, so on a stock broker its first replies after start fail",
		tests: "`broker/reply_test.go`; Go integration: `TestRequestReply`",
	},
	325: { // SEND_REPLY_MESSAGE_V2
		does:  "as 324",
		diff:  "as 324",
		tests: "`broker/reply_test.go`; Java: `RequestReplyTest`",
	},
	327: { // ADD_WRITE_PERM_OF_BROKER
		tests: "`namesrv/server_test.go`",
	},
	328: { // GET_ALL_PRODUCER_INFO
		does:  "served: a ProducerTableInfo `{\"data\":{group:[ProducerInfo]}}`",
		tests: "`broker/stats_processors_test.go`, `cmd/rmq/admin_stats_cmd_test.go`; Java: `MQAdminStatsTest` (mqadmin producer)",
	},
	329: { // DELETE_EXPIRED_COMMITLOG
		does:  "served: the next 20 cleanup rounds run whatever `deleteWhen` says (files must still be past `fileReservedTime` unless the disk is over `diskSpaceCleanForciblyRatio`); SUCCESS",
		tests: "`broker/retention_test.go` (`TestRetentionAdminRequests`), `store/cleanup_test.go`, `cmd/rmq/admin_json_test.go`",
	},
	217: { // REGISTER_TOPIC_IN_NAMESRV
		does:  "served (a 5.x code)",
		tests: "`namesrv/server_test.go`",
	},
	18: { // UPDATE_AND_CREATE_TOPIC_LIST
		does:  "served (a 5.x code): each config of `topicConfigList` over the Java field initialisers, checked in order as 5.3.3 checks UPDATE_AND_CREATE_TOPIC (INVALID_PARAMETER for a bad name, a system topic, MIXED); a config equal to the topic's current one answers SUCCESS at once, the later ones unapplied, as stock",
		diff:  "A refused attribute modification changes no topic (Java has applied the configs before it in memory); bodies over 4 MiB and unknown `topicFilterType`s are refused with SYSTEM_ERROR",
		tests: "`broker/brokeradmin/topic_list_test.go`, `cmd/rmq/admin_group5_test.go`; Java: `Admin5Test` (mqadmin 5.3.3 `updateTopicList`)",
	},
	225: { // UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST
		does:  "served (a 5.x code): every config of `groupConfigList` over the stock defaults, persisted once; an empty list is SUCCESS",
		diff:  "A group name that is not valid refuses the whole list (stock checks none); bodies over 4 MiB are refused with SYSTEM_ERROR",
		tests: "`broker/clients/admin_group5_test.go`, `cmd/rmq/admin_group5_test.go`; Java: `Admin5Test` (mqadmin 5.3.3 `updateSubGroupList`)",
	},
	343: { // QUERY_TOPICS_BY_CONSUMER
		does:  "served (a 5.x code): `TopicList` of the topics the group has offsets for (retry topic and offline history included) and the broker address",
		tests: "`broker/clients/admin_group5_test.go`, `cmd/rmq/admin_group5_test.go`; Java: `Admin5Test` (DefaultMQAdminExt.queryTopicsByConsumer)",
	},
	345: { // QUERY_SUBSCRIPTION_BY_CONSUMER
		does:  "served (a 5.x code): `{group, topic, subscriptionData}` from the online consumers' heartbeats; none is SUCCESS without `subscriptionData`",
		diff:  "Subscriptions only POP or pulls with a subscription carried (stock's compensation table) are not found",
		tests: "`broker/clients/admin_group5_test.go`, `cmd/rmq/admin_group5_test.go`; Java: `Admin5Test` (DefaultMQAdminExt.querySubscription)",
	},
	353: { // UPDATE_AND_GET_GROUP_FORBIDDEN
		does:  "served (a 5.x code): sets or clears the group's read bit on the topic (persisted in `subscriptionGroup.json` `forbiddenTable`; clearing the last bit drops the group's entry, as stock), answers `GroupForbidden`; a pull without the subscription flag of an online group is then refused NO_PERMISSION `the consumer group[g] is forbidden for topic[t]`",
		diff:  "The pull refusal carries no `forbiddenType` response field",
		tests: "`broker/clients/admin_group5_test.go`, `cmd/rmq/admin_group5_test.go` (`TestPullRefusedWhileGroupForbidden`); Java: `Admin5Test` (DefaultMQAdminExt.updateAndGetGroupReadForbidden)",
	},
	351: { // GET_TOPIC_CONFIG
		does:  "served (a 5.x code): one topic's config with its attributes",
		tests: "`broker/brokeradmin/topic_test.go`, `broker/message_type_test.go`",
	},
	352: { // GET_SUBSCRIPTIONGROUP_CONFIG
		does:  "served (a 5.x code)",
		tests: "`broker/clients/processors_test.go`",
	},
	361: { // LITE_PULL_MESSAGE
		does:  "served (a 5.x code): as PULL_MESSAGE",
		tests: "`broker/send_inline_test.go`, `broker/pull_sql_test.go`",
	},
	370: { // RECALL_MESSAGE
		does:  "served (a 5.x code): the recall handle of a timer message not yet delivered; that message is then never delivered",
		tests: "`broker/timer_test.go`, `broker/timer_disabled_test.go`, `cmd/rmq/timer_admin_test.go`; Go integration: `integration/timer_test.go`",
	},
	400: { // QUERY_ASSIGNMENT
		does:  "served (5.x POP, see below)",
		tests: "`broker/pop/mode_test.go`",
	},
	401: { // SET_MESSAGE_REQUEST_MODE
		does:  "served (5.x POP): kept in `config/messageRequestMode.json`",
		tests: "`broker/pop/mode_test.go`",
	},
	901: { // GET_BROKER_MEMBER_GROUP
		does:  "served (slave-acting-master): the group's live members",
		tests: "`namesrv/acting_master_test.go`, `broker/acting_master_test.go`",
	},
	905: { // NOTIFY_MIN_BROKER_ID_CHANGE
		does:  "served (slave-acting-master, `enableSlaveActingMaster`): the slave of least id runs delay levels, timers, the transaction check (undecided half messages escape as prepared messages) and POP revive from its replicated store, what they deliver sent to another group's master with `enableRemoteEscape`; sent by the name server with `notifyMinBrokerIdChanged`",
		diff:  "a half message or revive the escape bridge refuses waits for the next pass (stock drops a half message after 10 tries); a returning master first takes the acting slave's delay offsets (45), timer checkpoint (60) and transaction-check progress (from 43), forward and only where its store holds what they cover (stock reads them, with consumer offsets, only in its pre-online phase, `totalReplicas` > 1, and takes them whole by dataVersion)",
		tests: "`broker/acting_master_test.go`, `broker/acting_master_takeover_test.go`, `broker/acting_master_handback_test.go`, `namesrv/acting_master_test.go`",
	},
	906: { // EXCHANGE_BROKER_HA_INFO
		does:  "served: a master answers a request without `masterHaAddress` with its HA address, listen address and commitlog end at start; a slave takes one with it as its master. Sent by an acting-master slave that learns its master is back without its HA address (member polls)",
		diff:  "not sent by a master before it registers (5.3.3 BrokerPreOnlineService with `totalReplicas` > 1: rmq has no pre-online phase)",
		tests: "`broker/acting_master_compat_test.go`, `broker/acting_master_test.go`",
	},
	1007: { // GET_BROKER_EPOCH_CACHE
		does:  "served in controller mode (`enableControllerMode`): cluster, broker name, brokerId, the HA service's epoch table and the max offset; SYSTEM_ERROR \"this request only for controllerMode \" otherwise, as stock",
		tests: "`broker/replicas/manager_test.go`",
	},
	1008: { // NOTIFY_BROKER_ROLE_CHANGED
		does:  "served in controller mode: the controller's new master applies when its epoch is higher (broker/replicas); SUCCESS without effect otherwise, as stock",
		diff:  "answered after the role change, which never waits for a remote call (the name-server registration and the sync state set report follow on their own goroutines)",
		tests: "`broker/replicas/manager_test.go`, `broker/replicas/e2e_test.go`",
	},
	402: { // GET_ALL_MESSAGE_REQUEST_MODE
		does:  "served (5.x POP): the mode table as `messageRequestMode.json` holds it",
		tests: "`broker/pop/mode_test.go`",
	},
	907: { // GET_BROKER_HA_STATUS
		does:  "served: HARuntimeInfo as the classic DefaultHAService (and in controller mode AutoSwitchHAService) fills it: on a master each slave connection's addr, slaveAckOffset, diff, inSync, transferredByteInSecond, transferFromWhere; on a slave masterAddr, maxOffset, lastReadTimestamp, lastWriteTimestamp, transferredByteInSecond; needs no ACL 2.0 action (no header), as stock",
		diff:  "masterFlushOffset is 0 on a slave (stock serves its store checkpoint's value in both modes, which only 906 with syncMasterFlushOffsetWhenStartup or 908 set: 0 by default)",
		tests: "`broker/ha_status_test.go`, `store/ha/stats_test.go`, `store/ha/autoswitch/service_test.go`, `integration/hastatus_mqadmin_test.go`, `auth/auth_test.go`",
	},
	200050: { // POP_MESSAGE
		does:  "served (5.x POP, long polling; see below)",
		tests: "`broker/pop/pop_test.go`; Java: `Client5PopTest`",
	},
	200051: { // ACK_MESSAGE
		does:  "served (5.x POP)",
		diff:  "An ack of a message no longer in flight stores nothing",
		tests: "`broker/pop/pop_test.go`; Java: `Client5PopTest`",
	},
	200052: { // PEEK_MESSAGE
		does:  "served (5.x POP)",
		tests: "`broker/pop/pop_test.go`",
	},
	200053: { // CHANGE_MESSAGE_INVISIBLETIME
		does:  "served (5.x POP)",
		diff:  "For a message no longer in flight: NO_MESSAGE; invisibleTime outside (0, timerMaxDelaySec]: INVALID_PARAMETER",
		tests: "`broker/pop/pop_test.go`; Java: `Client5PopTest`",
	},
	200054: { // NOTIFICATION
		does:  "served (5.x POP)",
		tests: "`broker/pop/pop_test.go`",
	},
	200055: { // POLLING_INFO
		does:  "served (5.x POP)",
		tests: "`broker/pop/pop_test.go`",
	},
	200151: { // BATCH_ACK_MESSAGE
		does:  "served (5.x POP)",
		tests: "`broker/pop/pop_test.go`",
	},
	9100: { // CLOCK_FAST_FORWARD (rmq's own, remoting/codes_rmq.go)
		does:  "with `clockControlEnable=true`: moves the message clock `durationMs` ahead, delivering what falls due in due order (`broker.FastForward`, as `rmqtest.FastForward`), bounded by `timeoutMs` (default 30 s, at most 5 min); answers `brokerTime`, `clockOffsetMs`. `rmq admin fastForward -b`/`-c` `-d`",
		diff:  "No RocketMQ broker has it. Key off: NO_PERMISSION; bad header: INVALID_PARAMETER; not settled in time: SYSTEM_ERROR with what it waited for; a jump already running: SYSTEM_BUSY; ACL on: needs an admin account",
		tests: "`broker/clock_control_test.go`, `admin/clock_test.go`, `cmd/rmq/admin_clock_test.go`, `scripts/scripts_test.sh`; Java: `container/ClockControlContainerTest`; Python: `TestSDK5PythonClock`",
	},
}
