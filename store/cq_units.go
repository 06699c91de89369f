package store

// CQUnit is one consume-queue entry: where the message is in the commitlog
// and its tags hash (QUERY_CONSUME_QUEUE shows them).
type CQUnit struct {
	PhyOffset int64
	Size      int32
	TagsCode  int64
}

// ConsumeQueueUnits returns up to count entries of topic/queueID starting at
// logical offset index, stopping at the end of the queue; exists is false
// when the queue has no consume queue at all.
func (s *Store) ConsumeQueueUnits(topic string, queueID int32, index int64, count int) (units []CQUnit, exists bool) {
	q, _ := s.queueFor(topic, queueID, false)
	if q == nil {
		return nil, false
	}
	if index < q.minOffset() {
		return nil, true
	}
	for i := index; i < q.maxOffset() && len(units) < count; i++ {
		phy, size, tags, ok := q.unit(i)
		if !ok {
			break
		}
		units = append(units, CQUnit{PhyOffset: phy, Size: size, TagsCode: tags})
	}
	return units, true
}
