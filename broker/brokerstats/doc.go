// Package brokerstats keeps the broker's per-topic and per-group counters
// with the minute, hour and day windows of J4 BrokerStatsManager, the
// numbers mqadmin statsAll and brokerConsumeStats, rocketmq-exporter and
// rocketmq-dashboard read through VIEW_BROKER_STATS_DATA.
//
//	item.go     Item: value and times counters and their snapshot lists (J4 StatsItem)
//	body.go     the VIEW_BROKER_STATS_DATA body
//	manager.go  Set (J4 StatsItemSet), Manager, the stats names and statsKey forms
//
// Recording is on the send and pull paths, so it is cheap: a Set's items sit
// in an immutable map behind an atomic pointer, looked up by a struct Key
// without building a string, and an Item is two atomic counters. The broker
// calls Manager.Tick every second on its clock; it samples each window when
// due (every 10 s, 10 min and hour).
//
// brokerstats imports only internal/fastjson (body.go); the broker serves the requests
// (broker/broker.go).
package brokerstats
