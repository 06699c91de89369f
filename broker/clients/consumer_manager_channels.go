package clients

import "sort"

// Channels returns copies of group's client channels, sorted by client id;
// nil when the group is offline.
func (m *ConsumerManager) Channels(group string) []ClientChannel {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.groups[group]
	if g == nil {
		return nil
	}
	out := make([]ClientChannel, 0, len(g.channels))
	for _, ch := range g.channels {
		out = append(out, *ch)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ClientID < out[j].ClientID })
	return out
}

// Clone gives destGroup a copy of srcGroup's offsets of topic
// (ConsumerOffsetManager.cloneOffset); nothing when srcGroup has none.
func (m *ConsumerOffsetManager) Clone(srcGroup, destGroup, topic string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	src := m.table[offsetKey(srcGroup, topic)]
	if src == nil {
		return
	}
	cp := make(map[int32]int64, len(src))
	for k, v := range src {
		cp[k] = v
	}
	m.table[offsetKey(destGroup, topic)] = cp
	m.version++
}
