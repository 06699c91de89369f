package controller

import (
	"cmp"
	"slices"
)

// elect is 5.3.3 DefaultElectPolicy.elect: try the sync state set, then
// (unclean elections on) every replica. In each, only alive brokers count;
// the old master stays when alive and no other broker is designated; a
// designated broker wins when alive, else nobody; otherwise the best
// candidate by epoch (higher first), max offset (higher first) and
// election priority (lower first) wins.
func elect(cluster, brokerName string, syncSet, all []int64, oldMaster, prefer *int64, live liveness) *int64 {
	if syncSet != nil {
		if m := tryElect(cluster, brokerName, syncSet, oldMaster, prefer, live); m != nil {
			return m
		}
	}
	if all != nil {
		return tryElect(cluster, brokerName, all, oldMaster, prefer, live)
	}
	return nil
}

func tryElect(cluster, brokerName string, ids []int64, oldMaster, prefer *int64, live liveness) *int64 {
	var cands []*brokerLive
	has := func(id int64) bool {
		return slices.ContainsFunc(cands, func(l *brokerLive) bool { return l.BrokerID == id })
	}
	for _, id := range ids {
		if !live.alive(cluster, brokerName, id) {
			continue
		}
		l := live.info(cluster, brokerName, id)
		if l == nil {
			l = &brokerLive{BrokerID: id, Epoch: -1, MaxOffset: -1}
		}
		cands = append(cands, l)
	}
	if len(cands) == 0 {
		return nil
	}
	if oldMaster != nil && has(*oldMaster) && (prefer == nil || *prefer == *oldMaster) {
		return ptr(*oldMaster)
	}
	if prefer != nil {
		if has(*prefer) {
			return ptr(*prefer)
		}
		return nil
	}
	// Stock compares offsets through an int cast of their difference,
	// which orders wrongly past 2 GiB apart; this compares the numbers.
	// Ties (same epoch, offset and priority) go to the lower id, where
	// stock's TreeSet keeps whichever came first from a HashSet.
	best := slices.MinFunc(cands, func(a, b *brokerLive) int {
		return cmp.Or(cmp.Compare(b.Epoch, a.Epoch), cmp.Compare(b.MaxOffset, a.MaxOffset),
			cmp.Compare(a.ElectionPriority, b.ElectionPriority), cmp.Compare(a.BrokerID, b.BrokerID))
	})
	return ptr(best.BrokerID)
}
