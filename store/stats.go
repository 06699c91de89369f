package store

import (
	"strconv"
	"strings"
	"sync/atomic"
)

// storeStats are monotonic counters since Open.
type storeStats struct {
	putMessages    atomic.Int64
	putBytes       atomic.Int64
	putFailures    atomic.Int64
	putWouldBlock  atomic.Int64 // inline puts refused with ErrWouldBlock
	flushTimeouts  atomic.Int64
	flushErrors    atomic.Int64
	dispatchErrors atomic.Int64
	dispatchStalls atomic.Int64 // times dispatch stopped at a record (full disk or I/O error)
	putDispatches  atomic.Int64 // puts that dispatched their own records (dispatch_own.go)
	diskFullTimes  atomic.Int64 // times the disk check started refusing puts
	getCalls       atomic.Int64
	getFound       atomic.Int64
	getMessages    atomic.Int64
	times          storeTimes // put/get durations (stats_times.go)
}

// RuntimeInfo returns counters and positions, keyed like Java's
// getRuntimeInfo where an equivalent exists.
func (s *Store) RuntimeInfo() map[string]string {
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	st := &s.stats
	s.cqMu.RLock()
	queues := 0
	for _, m := range s.cqs {
		queues += len(m)
	}
	s.cqMu.RUnlock()
	used, full := s.DiskStatus()
	m := map[string]string{
		"diskUsedRatio": formatRatio(used),
		// Java getRuntimeInfo's key; queues share the commitlog's file system.
		"consumeQueueDiskRatio":        strconv.FormatFloat(used, 'f', -1, 64),
		"diskFull":                     strconv.FormatBool(full),
		"diskFullTimes":                i(st.diskFullTimes.Load()),
		"bootTimestamp":                i(s.bootTime.UnixMilli()),
		"commitLogMinOffset":           i(s.MinPhyOffset()),
		"commitLogMaxOffset":           i(s.MaxPhyOffset()),
		"commitLogFlushedOffset":       i(s.cl.flushedOffset.Load()),
		"commitLogFlushTimes":          i(s.cl.flushes.Load()),
		"dispatchBehindBytes":          i(s.DispatchBehind()),
		"consumeQueueCount":            i(int64(queues)),
		"putMessageTimesTotal":         i(st.putMessages.Load()),
		"putMessageSizeTotal":          i(st.putBytes.Load()),
		"putMessageFailedTimes":        i(st.putFailures.Load()),
		"putMessageFlushTimeouts":      i(st.flushTimeouts.Load()),
		"putMessageInlineWouldBlock":   i(st.putWouldBlock.Load()),
		"flushErrors":                  i(st.flushErrors.Load()),
		"dispatchErrors":               i(st.dispatchErrors.Load()),
		"dispatchDiskFullStalls":       i(st.dispatchStalls.Load()),
		"dispatchStalled":              strconv.FormatBool(s.dispatchStalled.Load()),
		"dispatchByPuts":               i(st.putDispatches.Load()),
		"getMessageTimesTotal":         i(st.getCalls.Load()),
		"getMessageTimesTotalFound":    i(st.getFound.Load()),
		"getMessageTransferedMsgCount": i(st.getMessages.Load()),
		"putMessageEntireTimeMax":      i(st.times.putMax.Load()),
		"getMessageEntireTimeMax":      i(st.times.getMax.Load()),
		"putMessageDistributeTime":     st.times.distribution(s.opts.Clock.Now()),
		// J4 StoreStatsService: the size total over the put count, 1 when
		// there was none.
		"putMessageAverageSize": javaDouble(float64(st.putBytes.Load()) / float64(max(st.putMessages.Load(), 1))),
		// J4 reports its dispatchMaxBuffer, which nothing in 4.9.8 sets.
		"dispatchMaxBuffer":      "0",
		"flushDiskType":          s.opts.FlushDiskType.String(),
		"recoveryCleanShutdown":  strconv.FormatBool(s.recovery.clean),
		"recoveryScannedFrom":    i(s.recovery.scannedFrom),
		"recoveryRecords":        i(s.recovery.records),
		"recoveryCorruptRegions": i(s.recovery.corruptRegions),
		"recoverySkippedBytes":   i(s.recovery.skippedBytes),
		"recoveryTornTailBytes":  i(s.recovery.tornTailBytes),
		"recoveryDroppedUnits":   i(s.recovery.droppedUnits),
	}
	for k, v := range s.cleanupInfo() {
		m[k] = v
	}
	return m
}

// javaDouble formats v as Java's String.valueOf(double) does for the
// values here: a whole number keeps ".0".
func javaDouble(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(s, ".NI") {
		s += ".0"
	}
	return s
}
