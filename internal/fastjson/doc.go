// Package fastjson reads and writes JSON the way Alibaba fastjson 1.x (the
// serializer of Java RocketMQ's broker, name server and tools) does. It is
// the one place in rmq that knows fastjson's departures from JSON; it imports
// no other package of this module.
//
// Java serializes every body and config file through
// RemotingSerializable.toJson(obj, prettyFormat), which is
// JSON.toJSONString(obj, prettyFormat) with fastjson's default features
// (remoting/.../protocol/RemotingSerializable.java; fastjson 1.2.69 in 4.9.x,
// 1.2.83 in 5.x). Getters are written in alphabetical order, null fields are
// left out, and:
//
// # Quirk 1: non-string map keys are written bare
//
// fastjson's MapSerializer writes a key that is not a String with that key's
// own serializer, not as a string. A Map<Integer,Long> or Map<Long,String>
// gives number keys:
//
//	consumerOffset.json  {"offsetTable":{"TopicTest@G":{0:250,1:248}}}
//	delayOffset.json     {"offsetTable":{1:23,2:0}}        (ScheduleMessageService,
//	                                                      DelayOffsetSerializeWrapper)
//	TopicRouteData       {"brokerAddrs":{0:"10.0.0.1:10911"},...}  (BrokerData)
//
// Config files go through ConfigManager.persist, which writes them
// pretty-printed (encode(true)): tabs, newlines, the same bare keys.
//
// # Quirk 2: object map keys are written as the object
//
// A map keyed by a bean gets the bean's JSON as the key:
//
//	ConsumeStats  {"consumeTps":0.0,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:
//	                  {"brokerOffset":10,"consumerOffset":7,"lastTimestamp":1700000000000}}}
//
// ConsumeStats.offsetTable is a HashMap<MessageQueue,OffsetWrapper>
// (common/admin/ConsumeStats.java, common/admin/OffsetWrapper.java); the same
// form comes with TopicStatsTable.offsetTable, ConsumerRunningInfo.mqTable
// and ResetOffsetBody.offsetTable. It is the only form of these maps that
// Java's parser is known to read back, so rmq writes it too
// (AppendMessageQueue).
//
// # Quirk 3: BrowserCompatible quotes the keys
//
// With BrowserCompatible or WriteNonStringKeyAsString, fastjson writes
// JSON.toJSONString(key) as a string key instead ({"0":"a"}). The name
// server does so for route data asked by 4.9.4+ clients or when
// acceptStandardJsonOnly is set (DefaultRequestProcessor.getRouteInfoByTopic);
// AppendIntKey writes either form.
//
// # Quirk 4: the parser is lenient
//
// fastjson's default parser features (JSON.DEFAULT_PARSER_FEATURE) include
// AllowUnQuotedFieldNames and AllowSingleQuotes, so Java reads {topic:'T'}
// and quoted number keys alike; Normalize accepts both too. Doubles are
// written in Double.toString form, always with a fraction ("0.0", "1.0E7"),
// and NaN and the infinities as null (AppendDouble).
//
// # Reading
//
// Normalize turns any of the above into standard compact JSON, with an
// object key turned into a string holding the object's compact JSON:
//
//	{0:1,{"queueId":0}:2}  ->  {"0":1,"{\"queueId\":0}":2}
//
// which any decoder reads; Unmarshal normalizes only when needed and
// decodes with encoding/json; Entries decodes such maps, object-keyed or
// number-keyed, into ordered key/value pairs. What the writers here write,
// Normalize and Entries read back (FuzzRoundTrip).
package fastjson
