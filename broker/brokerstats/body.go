package brokerstats

import (
	"strconv"

	"github.com/rmqio/rmq/internal/fastjson"
)

// BrokerStatsData is the VIEW_BROKER_STATS_DATA body of it: its minute, hour
// and day windows as BrokerStatsItems, doubles in Java's form.
//
//	{"statsDay":{"avgpt":0.0,"sum":0,"tps":0.0},"statsHour":{...},"statsMinute":{...}}
func BrokerStatsData(it *Item) []byte {
	buf := []byte(`{"statsDay":`)
	buf = appendStatsItem(buf, it.Day())
	buf = append(buf, `,"statsHour":`...)
	buf = appendStatsItem(buf, it.Hour())
	buf = append(buf, `,"statsMinute":`...)
	buf = appendStatsItem(buf, it.Minute())
	return append(buf, '}')
}

func appendStatsItem(buf []byte, s Snapshot) []byte {
	buf = append(buf, `{"avgpt":`...)
	buf = fastjson.AppendDouble(buf, s.Avgpt)
	buf = append(buf, `,"sum":`...)
	buf = strconv.AppendInt(buf, s.Sum, 10)
	buf = append(buf, `,"tps":`...)
	buf = fastjson.AppendDouble(buf, s.Tps)
	return append(buf, '}')
}
