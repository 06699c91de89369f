package broker

import (
	"fmt"
	"strings"

	"github.com/rmqio/rmq/broker/brokerstats"
	"github.com/rmqio/rmq/broker/transaction"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/schedule"
	"github.com/rmqio/rmq/store"
)

// scheduleStore is the store as the schedule service writes to it: a due
// message stored on its real topic counts in the broker's stats as J4
// ScheduleMessageService's delivery does (brokerstats
// RecordScheduleDelivery), so VIEW_BROKER_STATS_DATA shows the put of a
// consumer's retry topic when the retry falls due. A message the service
// moves to a DLQ is not a delivery.
type scheduleStore struct {
	*store.Store
	stats *brokerstats.Manager
}

func (s scheduleStore) PutMessage(m *message.Message) (*store.PutResult, error) {
	res, err := s.Store.PutMessage(m)
	if err == nil && !strings.HasPrefix(m.Topic, message.DLQTopicPrefix) {
		s.stats.RecordScheduleDelivery(m.Topic, res.Count, res.WroteBytes)
	}
	return res, err
}

// delayHook rewrites a message carrying DELAY > 0 onto SCHEDULE_TOPIC_XXXX
// (clamped to the highest level). Half messages are not delayed: their DELAY
// stays in the properties and applies when the transaction commits, which
// re-stores the message through this hook as a COMMIT-typed message.
func (b *Broker) delayHook(m *message.Message) error {
	if m.Topic == message.TopicTransHalf {
		return nil
	}
	if _, err := b.levels.Rewrite(m); err != nil {
		return &putError{code: remoting.MessageIllegal, remark: err.Error()}
	}
	return nil
}

// checkBatch refuses what stock refuses in a batch: a delay level or a
// transaction flag (sysFlag or TRAN_MSG) on any member (CommitLog.asyncPutMessages).
func checkBatch(msgs []*message.Message) error {
	for _, m := range msgs {
		level, err := schedule.DelayLevel(m.Properties)
		if err != nil || level > 0 {
			return &putError{code: remoting.MessageIllegal, remark: fmt.Sprintf("batch messages of topic %s cannot carry a delay level", m.Topic)}
		}
		if message.TransactionType(m.SysFlag) != 0 || remoting.JavaBool(m.Properties[transaction.HookProperty]) {
			return &putError{code: remoting.MessageIllegal, remark: fmt.Sprintf("batch messages of topic %s cannot be transactional", m.Topic)}
		}
	}
	return nil
}

// tagsCode is the consume-queue tagsCode: the deliver time for schedule-topic
// messages, the tag hash for the rest.
func (b *Broker) tagsCode(topic string, props message.Props, storeMs int64) int64 {
	if code, ok := b.levels.TagsCode(topic, props, storeMs); ok {
		return code
	}
	return message.TagsHash(props.Get(message.PropTags))
}
