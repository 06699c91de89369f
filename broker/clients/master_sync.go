package clients

import (
	"encoding/json"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// What a SLAVE broker copies from its master (4.9.8 SlaveSynchronize): the
// consumer offsets and the subscription groups, each from the body the
// master answers GET_ALL_CONSUMER_OFFSET and GET_ALL_SUBSCRIPTIONGROUP_CONFIG
// with. A Java master writes them with fastjson (bare integer keys), so they
// are read through fastjson.Unmarshal.

// PutAllFromMaster applies a GET_ALL_CONSUMER_OFFSET body as
// syncConsumerOffset does, offsetTable.putAll: every topic@group the master
// has replaces this broker's queue offsets of that key whole (also where the
// local ones are ahead, as stock: issue #1094), and keys the master lacks
// are kept. It returns the number of keys copied; the caller persists.
func (m *ConsumerOffsetManager) PutAllFromMaster(body []byte) (int, error) {
	var f offsetFile
	if err := fastjson.Unmarshal(body, &f); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, q := range f.OffsetTable {
		if q == nil {
			continue
		}
		m.table[k] = q
		n++
	}
	m.version++
	return n, nil
}

// OffsetInBody reads one queue offset of group on topic from a
// GET_ALL_CONSUMER_OFFSET body (another broker's table); ok is false when
// the body has none.
func OffsetInBody(body []byte, group, topic string, queueID int32) (offset int64, ok bool, err error) {
	var f offsetFile
	if err := fastjson.Unmarshal(body, &f); err != nil {
		return 0, false, err
	}
	offset, ok = f.OffsetTable[offsetKey(group, topic)][queueID]
	return offset, ok, nil
}

// ReplaceFromMaster applies a GET_ALL_SUBSCRIPTIONGROUP_CONFIG body as
// syncSubscriptionGroupConfig does: when its dataVersion differs from this
// manager's, the table is replaced by the master's whole and takes its
// version, and the file is written. It reports whether it replaced.
func (m *SubscriptionGroupManager) ReplaceFromMaster(body []byte) (bool, error) {
	var f struct {
		DataVersion            remoting.DataVersion       `json:"dataVersion"`
		SubscriptionGroupTable map[string]json.RawMessage `json:"subscriptionGroupTable"`
	}
	if err := fastjson.Unmarshal(body, &f); err != nil {
		return false, err
	}
	table := make(map[string]*topicgroup.SubscriptionGroupConfig, len(f.SubscriptionGroupTable))
	for name, raw := range f.SubscriptionGroupTable {
		cfg, err := decodeSubscriptionGroupConfig(raw)
		if err != nil {
			return false, err
		}
		if cfg == nil {
			continue
		}
		if cfg.GroupName == "" {
			cfg.GroupName = name
		}
		table[name] = cfg
	}
	m.mu.Lock()
	if m.version == f.DataVersion {
		m.mu.Unlock()
		return false, nil
	}
	m.table, m.version = table, f.DataVersion
	m.mu.Unlock()
	return true, m.Persist()
}
