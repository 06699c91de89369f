// Package namesrv is a RocketMQ 4.x name server: brokers register their topics
// here (REGISTER_BROKER every 30 s), clients and tools look routes up
// (GET_ROUTEINFO_BY_TOPIC and the admin requests), and a small namespaced KV
// store keeps settings such as ORDER_TOPIC_CONFIG.
//
// RouteInfoManager holds the tables and has no network; Server puts it behind
// a remoting server, expires brokers that stop registering (a scan every 10 s
// drops those silent for 120 s) and drops a broker at once when the connection
// it registered over closes.
//
// # Route body (GET_ROUTEINFO_BY_TOPIC reply)
//
// Compact JSON, keys in fastjson's alphabetical order. brokerAddrs keys are
// quoted for clients at version >= 401 (4.9.4) or with acceptStandardJsonOnly,
// and bare for older clients, Go's included, as the Java name server does:
//
//	{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],
//	 "filterServerTable":{},"orderTopicConf":"broker-a:4",   <- only with orderMessageEnable and a KV entry
//	 "queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}
//
// # Compressed REGISTER_BROKER body (header compressed=true)
//
// One zlib stream; every integer is a big-endian int32:
//
//	+---------+------------------+-------+----------------------------------+---------+----------------------+
//	| dvLen   | DataVersion JSON | count | count x (len | topic config line) | fsLen   | filterServerList JSON|
//	+---------+------------------+-------+----------------------------------+---------+----------------------+
//	  4 bytes   dvLen bytes        4       4 + len each                       4         fsLen bytes
//
// A topic config line is "name readQueueNums writeQueueNums perm topicFilterType"
// (J5 adds " {attributes}"); topicSysFlag and order are not carried. A J5 broker
// appends static-topic mapping entries after the filter servers; they are ignored.
//
// # KV config file (Options.KVConfigPath)
//
// The Java KVConfigSerializeWrapper, rewritten whole after each change via a
// temporary file and a rename:
//
//	{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicA":"broker-a:4;broker-b:4"}}}
package namesrv
