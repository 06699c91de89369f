package broker

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/rmqio/rmq/remoting"
)

func offsetResponse(req *remoting.Command, v int64) *remoting.Command {
	resp := remoting.NewResponse(req, remoting.Success, "")
	(&remoting.OffsetResponseHeader{Offset: v}).Encode(resp)
	return resp
}

// processGetMaxOffset serves GET_MAX_OFFSET: the next offset to be written.
func (b *Broker) processGetMaxOffset(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.QueueRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	return offsetResponse(req, b.store.MaxOffsetInQueue(hd.Topic, hd.QueueID))
}

// processGetMinOffset serves GET_MIN_OFFSET.
func (b *Broker) processGetMinOffset(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.QueueRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	return offsetResponse(req, b.store.MinOffsetInQueue(hd.Topic, hd.QueueID))
}

// processSearchOffset serves SEARCH_OFFSET_BY_TIMESTAMP.
func (b *Broker) processSearchOffset(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.SearchOffsetRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	return offsetResponse(req, b.store.OffsetInQueueByTime(hd.Topic, hd.QueueID, hd.Timestamp))
}

// processEarliestMsgStoreTime serves GET_EARLIEST_MSG_STORETIME; -1 when the
// queue holds nothing, as stock.
func (b *Broker) processEarliestMsgStoreTime(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.QueueRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	ts, err := b.store.EarliestMessageTime(hd.Topic, hd.QueueID)
	if err != nil {
		ts = -1
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	(&remoting.GetEarliestMsgStoretimeResponseHeader{Timestamp: ts}).Encode(resp)
	return resp
}

// processViewMessageByID serves VIEW_MESSAGE_BY_ID: the one record at the
// commitlog offset decoded from an offsetMsgId.
func (b *Broker) processViewMessageByID(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.ViewMessageRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	off := hd.Offset
	rec, err := b.store.LookMessageByOffset(off)
	if err != nil || len(rec) == 0 {
		return remoting.NewResponse(req, remoting.SystemError, "can not find message by the offset, "+strconv.FormatInt(off, 10))
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = rec
	return resp
}

// processQueryConsumerOffset serves QUERY_CONSUMER_OFFSET. Without a
// committed offset a new group starts at 0 when the queue still begins at 0
// and its first message is absent or recent enough to be in memory;
// otherwise QUERY_NOT_FOUND lets the client apply its ConsumeFromWhere.
func (b *Broker) processQueryConsumerOffset(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.QueryConsumerOffsetRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	group, topic, qid := hd.ConsumerGroup, hd.Topic, hd.QueueID
	if off, ok := b.clients.Offsets.Query(group, topic, qid); ok && off >= 0 {
		return offsetResponse(req, off)
	}
	if b.store.MinOffsetInQueue(topic, qid) <= 0 && !b.firstMessageOnDisk(topic, qid) {
		return offsetResponse(req, 0)
	}
	return remoting.NewResponse(req, remoting.QueryNotFound, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
}

// firstMessageOnDisk is checkInDiskByConsumeOffset(topic, queueId, 0): the
// queue's entry 0 exists and lies further behind the commitlog head than the
// in-memory share of physical memory.
func (b *Broker) firstMessageOnDisk(topic string, qid int32) bool {
	phy, ok := b.store.CommitLogOffsetOf(topic, qid, 0)
	if !ok {
		return false
	}
	return b.onDisk(phy)
}

// onDisk is checkInDiskByCommitOffset: the record at commitlog offset phy
// lies further behind the commitlog head than the in-memory share
// (accessMessageInMemoryMaxRatio) of physical memory.
func (b *Broker) onDisk(phy int64) bool {
	return b.store.MaxPhyOffset()-phy > physicalMemory()/100*int64(b.opts.AccessMessageInMemoryMaxRatio)
}

var (
	physMemOnce  sync.Once
	physMemBytes int64
)

// fallbackPhysicalMemory is assumed when /proc/meminfo cannot be read.
const fallbackPhysicalMemory = 8 << 30

// physicalMemory is the machine's RAM in bytes (MemTotal of /proc/meminfo).
func physicalMemory() int64 {
	physMemOnce.Do(func() {
		physMemBytes = fallbackPhysicalMemory
		f, err := os.Open("/proc/meminfo")
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) >= 2 && fields[0] == "MemTotal:" {
				if kb, err := strconv.ParseInt(fields[1], 10, 64); err == nil && kb > 0 {
					physMemBytes = kb << 10
				}
				return
			}
		}
	})
	return physMemBytes
}
