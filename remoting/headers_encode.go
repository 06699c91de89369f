package remoting

import "strconv"

// Fields of the request headers rmq sends (the admin client, the broker's
// calls to clients and name servers): the extFields of the request, with
// the names the decode reads. A nullable field is written only when set
// (a nil pointer, or an empty optional string where the sender has always
// left it out); the rest always.

func i64(v int64) string { return strconv.FormatInt(v, 10) }
func i32(v int32) string { return strconv.FormatInt(int64(v), 10) }

// setIf writes v under k when it is not empty.
func setIf(m map[string]string, k, v string) {
	if v != "" {
		m[k] = v
	}
}

// setPtr writes *v under k when v is not nil.
func setPtr(m map[string]string, k string, v *string) {
	if v != nil {
		m[k] = *v
	}
}

// Fields returns the header as extFields.
func (r *PutKVConfigRequestHeader) Fields() map[string]string {
	return map[string]string{"namespace": r.Namespace, "key": r.Key, "value": r.Value}
}

// Fields returns the header as extFields.
func (r *KVConfigRequestHeader) Fields() map[string]string {
	return map[string]string{"namespace": r.Namespace, "key": r.Key}
}

// Fields returns the header as extFields.
func (r *GetRouteInfoRequestHeader) Fields() map[string]string {
	m := map[string]string{"topic": r.Topic}
	if r.AcceptStandardJSONOnly {
		m["acceptStandardJsonOnly"] = "true"
	}
	return m
}

// Fields returns the header as extFields (clusterName always, as mqadmin).
func (r *DeleteTopicFromNamesrvRequestHeader) Fields() map[string]string {
	return map[string]string{"topic": r.Topic, "clusterName": r.ClusterName}
}

// Fields returns the header as extFields.
func (r *TopicRequestHeader) Fields() map[string]string { return map[string]string{"topic": r.Topic} }

// Fields returns the header as extFields (the default topic's, the
// filter type and the order flag always; attributes when set).
func (r *CreateTopicRequestHeader) Fields() map[string]string {
	m := map[string]string{
		"topic": r.Topic, "defaultTopic": r.DefaultTopic,
		"readQueueNums": i32(r.ReadQueueNums), "writeQueueNums": i32(r.WriteQueueNums), "perm": i32(r.Perm),
		"topicFilterType": r.TopicFilterType, "topicSysFlag": i32(r.TopicSysFlag), "order": strconv.FormatBool(r.Order),
	}
	setIf(m, "attributes", r.Attributes)
	return m
}

// Fields returns the header as extFields.
func (r *PullMessageRequestHeader) Fields() map[string]string {
	m := map[string]string{
		"consumerGroup": r.ConsumerGroup, "topic": r.Topic, "queueId": i32(r.QueueID),
		"queueOffset": i64(r.QueueOffset), "maxMsgNums": i32(r.MaxMsgNums), "sysFlag": i32(r.SysFlag),
		"commitOffset": i64(r.CommitOffset), "suspendTimeoutMillis": i64(r.SuspendTimeoutMillis),
		"subVersion": i64(r.SubVersion),
	}
	setIf(m, "subscription", r.Subscription)
	setIf(m, "expressionType", r.ExpressionType)
	return m
}

// Fields returns the header as extFields.
func (r *QueueRequestHeader) Fields() map[string]string {
	return map[string]string{"topic": r.Topic, "queueId": i32(r.QueueID)}
}

// Fields returns the header as extFields.
func (r *SearchOffsetRequestHeader) Fields() map[string]string {
	return map[string]string{"topic": r.Topic, "queueId": i32(r.QueueID), "timestamp": i64(r.Timestamp)}
}

// Fields returns the header as extFields.
func (r *ViewMessageRequestHeader) Fields() map[string]string {
	return map[string]string{"offset": i64(r.Offset)}
}

// Fields returns the header as extFields.
func (r *UpdateConsumerOffsetRequestHeader) Fields() map[string]string {
	return map[string]string{"consumerGroup": r.ConsumerGroup, "topic": r.Topic, "queueId": i32(r.QueueID), "commitOffset": i64(r.CommitOffset)}
}

// Fields returns the header as extFields (the unique-key flag always, as
// the 5.x tools send it).
func (r *QueryMessageRequestHeader) Fields() map[string]string {
	return map[string]string{
		"topic": r.Topic, "key": r.Key, "maxNum": i32(r.MaxNum),
		"beginTimestamp": i64(r.BeginTimestamp), "endTimestamp": i64(r.EndTimestamp),
		UniqueKeyQueryFlag: strconv.FormatBool(r.UniqueKeyFlag),
	}
}

// Fields returns the header as extFields.
func (r *RecallMessageRequestHeader) Fields() map[string]string {
	return map[string]string{"producerGroup": r.ProducerGroup, "topic": r.Topic, "recallHandle": r.RecallHandle, "bname": r.BrokerName}
}

// Fields returns the header as extFields.
func (r *ViewBrokerStatsDataRequestHeader) Fields() map[string]string {
	return map[string]string{"statsName": r.StatsName, "statsKey": r.StatsKey}
}

// Fields returns the header as extFields.
func (r *GetConsumeStatsInBrokerHeader) Fields() map[string]string {
	return map[string]string{"isOrder": strconv.FormatBool(r.IsOrder)}
}

// Fields returns the header as extFields.
func (r *FastForwardRequestHeader) Fields() map[string]string {
	m := map[string]string{"durationMs": i64(r.DurationMs)}
	if r.TimeoutMs != nil {
		m["timeoutMs"] = i64(*r.TimeoutMs)
	}
	return m
}

// Fields returns the header as extFields.
func (r *ConsumerGroupRequestHeader) Fields() map[string]string {
	return map[string]string{"consumerGroup": r.ConsumerGroup}
}

// Fields returns the header as extFields.
func (r *DeleteSubscriptionGroupRequestHeader) Fields() map[string]string {
	return map[string]string{"groupName": r.GroupName, "removeOffset": strconv.FormatBool(r.RemoveOffset)}
}

// Fields returns the header as extFields (jstackEnable false: rmq's tools
// never ask for a thread dump).
func (r *GetConsumerRunningInfoRequestHeader) Fields() map[string]string {
	return map[string]string{"consumerGroup": r.ConsumerGroup, "clientId": r.ClientID, "jstackEnable": "false"}
}

// Fields returns the header as extFields.
func (r *GetConsumeStatsRequestHeader) Fields() map[string]string {
	m := map[string]string{"consumerGroup": r.ConsumerGroup}
	setIf(m, "topic", r.Topic)
	return m
}

// Fields returns the header as extFields.
func (r *ResetOffsetRequestHeader) Fields() map[string]string {
	return map[string]string{"topic": r.Topic, "group": r.Group, "timestamp": i64(r.Timestamp), "isForce": strconv.FormatBool(r.IsForce)}
}

// Fields returns the header as extFields.
func (r *GetConsumerStatusRequestHeader) Fields() map[string]string {
	m := map[string]string{"topic": r.Topic, "group": r.Group}
	setIf(m, "clientAddr", r.ClientAddr)
	return m
}

// Fields returns the header as extFields (topic always, as mqadmin).
func (r *CloneGroupOffsetRequestHeader) Fields() map[string]string {
	return map[string]string{"srcGroup": r.SrcGroup, "destGroup": r.DestGroup, "topic": r.Topic, "offline": strconv.FormatBool(r.Offline)}
}

// Fields returns the header as extFields.
func (r *QueryConsumeQueueRequestHeader) Fields() map[string]string {
	m := map[string]string{"topic": r.Topic, "queueId": i32(r.QueueID), "index": i64(r.Index), "count": i32(r.Count)}
	setPtr(m, "consumerGroup", r.ConsumerGroup)
	return m
}

// Fields returns the header as extFields.
func (r *CreateAccessConfigRequestHeader) Fields() map[string]string {
	m := map[string]string{"accessKey": r.AccessKey, "admin": strconv.FormatBool(r.Admin)}
	setPtr(m, "secretKey", r.SecretKey)
	setPtr(m, "whiteRemoteAddress", r.WhiteRemoteAddress)
	setPtr(m, "defaultTopicPerm", r.DefaultTopicPerm)
	setPtr(m, "defaultGroupPerm", r.DefaultGroupPerm)
	setPtr(m, "topicPerms", r.TopicPerms)
	setPtr(m, "groupPerms", r.GroupPerms)
	return m
}

// Fields returns the header as extFields.
func (r *DeleteAccessConfigRequestHeader) Fields() map[string]string {
	return map[string]string{"accessKey": r.AccessKey}
}

// Fields returns the header as extFields (both always, as mqadmin).
func (r *UpdateGlobalWhiteAddrsConfigRequestHeader) Fields() map[string]string {
	m := map[string]string{"aclFileFullPath": r.AclFileFullPath}
	setPtr(m, "globalWhiteAddrs", r.GlobalWhiteAddrs)
	return m
}

// Fields returns the header as extFields (heartbeatTimeoutMillis, 5.x's,
// only when set).
func (r *RegisterBrokerRequestHeader) Fields() map[string]string {
	m := map[string]string{
		"brokerName": r.BrokerName, "brokerAddr": r.BrokerAddr, "clusterName": r.ClusterName,
		"haServerAddr": r.HAServerAddr, "brokerId": i64(r.BrokerID),
		"compressed": strconv.FormatBool(r.Compressed), "bodyCrc32": i64(r.BodyCrc32),
	}
	if r.HeartbeatTimeoutMillis > 0 {
		m["heartbeatTimeoutMillis"] = i64(r.HeartbeatTimeoutMillis)
	}
	if r.EnableActingMaster != nil {
		m["enableActingMaster"] = strconv.FormatBool(*r.EnableActingMaster)
	}
	return m
}

// Fields returns the header as extFields.
func (r *BrokerIdentityRequestHeader) Fields() map[string]string {
	return map[string]string{"brokerName": r.BrokerName, "brokerAddr": r.BrokerAddr, "clusterName": r.ClusterName, "brokerId": i64(r.BrokerID)}
}
