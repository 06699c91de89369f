package harness

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// The checks of a replicated pair read both brokers directly (raw remoting,
// no client routing): a queue of the slave must hold, offset for offset, the
// very records of the master's queue. A stored record carries its queue
// offset, commitlog offset (hence its msgId), store host and store timestamp,
// so equal record bytes are the "same offsets, same msgIds, same store
// timestamps" of issue 44 at once.

// rawTimeout bounds one raw request.
const rawTimeout = 5 * time.Second

// ErrQueueDiffers is returned when a slave's queue differs from the master's.
var ErrQueueDiffers = errors.New("harness: the slave's queue differs from the master's")

// MaxOffset asks the broker at addr for the max offset of a queue
// (GET_MAX_OFFSET).
func MaxOffset(cl *remoting.Client, addr, topic string, queue int) (int64, error) {
	req := remoting.NewRequest(remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": strconv.Itoa(queue)}, nil)
	resp, err := cl.InvokeTimeout(addr, req, rawTimeout)
	if err != nil {
		return 0, err
	}
	if resp.Code != remoting.Success {
		return 0, fmt.Errorf("GET_MAX_OFFSET %s/%d at %s: code %d %q", topic, queue, addr, resp.Code, resp.Remark)
	}
	return strconv.ParseInt(resp.Ext()["offset"], 10, 64)
}

// ConsumerOffset asks the broker at addr for group's committed offset of a
// queue (QUERY_CONSUMER_OFFSET); found is false when the broker has none
// (QUERY_NOT_FOUND).
func ConsumerOffset(cl *remoting.Client, addr, group, topic string, queue int) (off int64, found bool, err error) {
	req := remoting.NewRequest(remoting.QueryConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(queue)}, nil)
	resp, err := cl.InvokeTimeout(addr, req, rawTimeout)
	if err != nil {
		return 0, false, err
	}
	switch resp.Code {
	case remoting.Success:
		off, err := strconv.ParseInt(resp.Ext()["offset"], 10, 64)
		return off, err == nil, err
	case remoting.QueryNotFound:
		return 0, false, nil
	}
	return 0, false, fmt.Errorf("QUERY_CONSUMER_OFFSET %s %s/%d at %s: code %d %q", group, topic, queue, addr, resp.Code, resp.Remark)
}

// PullRaw pulls up to 32 messages of a queue from offset with a raw
// PULL_MESSAGE (subscription "*", no long polling, no commit offset) and
// returns the response: its body is the stored records as they are.
func PullRaw(cl *remoting.Client, addr, group, topic string, queue int, offset int64) (*remoting.Command, error) {
	req := remoting.NewRequest(remoting.PullMessage, map[string]string{
		"consumerGroup":        group,
		"topic":                topic,
		"queueId":              strconv.Itoa(queue),
		"queueOffset":          strconv.FormatInt(offset, 10),
		"maxMsgNums":           "32",
		"sysFlag":              "4", // subscription in the header
		"commitOffset":         "0",
		"suspendTimeoutMillis": "0",
		"subscription":         "*",
		"subVersion":           "0",
		"expressionType":       "TAG",
	}, nil)
	return cl.InvokeTimeout(addr, req, rawTimeout)
}

// ReadQueue returns the records of a queue from offset 0 up to (excluding)
// end, one []byte per record, as the broker at addr stores them.
func ReadQueue(cl *remoting.Client, addr, group, topic string, queue int, end int64) ([][]byte, error) {
	var recs [][]byte
	for off := int64(0); off < end; {
		resp, err := PullRaw(cl, addr, group, topic, queue, off)
		if err != nil {
			return nil, err
		}
		if resp.Code != remoting.Success {
			return nil, fmt.Errorf("PULL %s/%d@%d at %s: code %d %q", topic, queue, off, addr, resp.Code, resp.Remark)
		}
		n := 0
		for b := resp.Body; len(b) > 0; n++ {
			l, err := message.ParseLayout(b)
			if err != nil {
				return nil, fmt.Errorf("PULL %s/%d@%d at %s: %w", topic, queue, off, addr, err)
			}
			recs = append(recs, bytes.Clone(b[:l.Total]))
			b = b[l.Total:]
		}
		if n == 0 {
			return nil, fmt.Errorf("PULL %s/%d@%d at %s: empty body", topic, queue, off, addr)
		}
		off += int64(n)
	}
	if int64(len(recs)) > end {
		recs = recs[:end]
	}
	return recs, nil
}

// WaitCaughtUp waits until the slave's max offset of every queue of topic
// equals the master's, and returns the master's.
func WaitCaughtUp(cl *remoting.Client, master, slave, topic string, queues int, timeout time.Duration) ([]int64, error) {
	maxes := make([]int64, queues)
	err := Poll(timeout, func() error {
		for q := 0; q < queues; q++ {
			m, err := MaxOffset(cl, master, topic, q)
			if err != nil {
				return err
			}
			s, err := MaxOffset(cl, slave, topic, q)
			if err != nil {
				return fmt.Errorf("slave: %w", err)
			}
			if s != m {
				return fmt.Errorf("queue %d: slave max offset %d, master %d", q, s, m)
			}
			maxes[q] = m
		}
		return nil
	})
	return maxes, err
}

// CompareQueues reads every queue of topic from both brokers up to maxes and
// fails on the first record that differs in any byte. It returns the
// master's records, decoded, per queue.
func CompareQueues(cl *remoting.Client, master, slave, group, topic string, maxes []int64) ([][]*message.MessageExt, error) {
	all := make([][]*message.MessageExt, len(maxes))
	for q, end := range maxes {
		mrecs, err := ReadQueue(cl, master, group, topic, q, end)
		if err != nil {
			return nil, fmt.Errorf("master: %w", err)
		}
		srecs, err := ReadQueue(cl, slave, group, topic, q, end)
		if err != nil {
			return nil, fmt.Errorf("slave: %w", err)
		}
		if len(mrecs) != len(srecs) {
			return nil, fmt.Errorf("%w: queue %d: master %d records, slave %d", ErrQueueDiffers, q, len(mrecs), len(srecs))
		}
		for i := range mrecs {
			m, err := message.DecodeRecord(mrecs[i])
			if err != nil {
				return nil, err
			}
			if !bytes.Equal(mrecs[i], srecs[i]) {
				s, _ := message.DecodeRecord(srecs[i])
				return nil, fmt.Errorf("%w: queue %d offset %d: master record %s (%d bytes, stored %d), slave %s",
					ErrQueueDiffers, q, i, m.MsgID, len(mrecs[i]), m.StoreTimestamp, describe(s, srecs[i]))
			}
			all[q] = append(all[q], m)
		}
	}
	return all, nil
}

func describe(m *message.MessageExt, rec []byte) string {
	if m == nil {
		return fmt.Sprintf("undecodable (%d bytes)", len(rec))
	}
	return fmt.Sprintf("%s (%d bytes, queue offset %d, stored %d)", m.MsgID, len(rec), m.QueueOffset, m.StoreTimestamp)
}

// ViewByID asks the broker at addr for the record of an offset msgId
// (VIEW_MESSAGE_BY_ID, the commitlog offset the id encodes): the request
// mqadmin's queryMsgById sends to the address it reads from the id; here it
// goes to the slave too.
func ViewByID(cl *remoting.Client, addr, msgID string) ([]byte, error) {
	_, off, err := message.DecodeMessageID(msgID)
	if err != nil {
		return nil, err
	}
	req := remoting.NewRequest(remoting.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(off, 10)}, nil)
	resp, err := cl.InvokeTimeout(addr, req, rawTimeout)
	if err != nil {
		return nil, err
	}
	if resp.Code != remoting.Success {
		return nil, fmt.Errorf("VIEW_MESSAGE_BY_ID %s at %s: code %d %q", msgID, addr, resp.Code, resp.Remark)
	}
	return resp.Body, nil
}

// CreateTopic creates (or updates) topic on the broker at addr with queues
// read and write queues (UPDATE_AND_CREATE_TOPIC, perm 6).
func CreateTopic(cl *remoting.Client, addr, topic string, queues int) error {
	return CreateTopicAttrs(cl, addr, topic, queues, "")
}

// CreateTopicAttrs is CreateTopic with the 5.x topic attributes attrs
// ("+message.type=TRANSACTION"; none when "").
func CreateTopicAttrs(cl *remoting.Client, addr, topic string, queues int, attrs string) error {
	n := strconv.Itoa(queues)
	fields := map[string]string{
		"topic": topic, "defaultTopic": "TBW102", "readQueueNums": n, "writeQueueNums": n,
		"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
	}
	if attrs != "" {
		fields["attributes"] = attrs
	}
	req := remoting.NewRequest(remoting.UpdateAndCreateTopic, fields, nil)
	resp, err := cl.InvokeTimeout(addr, req, rawTimeout)
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("UPDATE_AND_CREATE_TOPIC %s at %s: code %d %q", topic, addr, resp.Code, resp.Remark)
	}
	return nil
}
