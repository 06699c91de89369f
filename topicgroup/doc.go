// Package topicgroup is what a broker knows about its topics and consumer
// groups, apart from how it is carried: a topic's configuration (queues,
// permission, order, attributes), a subscription group's configuration
// (consumption switches, retry policy), the permission bits both use, and
// the rules for changing a topic's 5.x attributes.
//
// The types keep their Java JSON names (TopicConfig, SubscriptionGroupConfig
// as fastjson writes them) because the broker persists them in that form and
// the remoting bodies (remoting.TopicConfigSerializeWrapper,
// remoting.SubscriptionGroupWrapper) embed them; but nothing here depends on
// the wire package, so the gRPC endpoint, the console and rmqtest can use a
// topic's configuration without importing the remoting protocol.
//
// The name says which two resources the package describes: "config" would
// be confused with conf (the broker's own settings), "model" or "domain"
// would not say of what.
package topicgroup
