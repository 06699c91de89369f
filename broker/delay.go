package broker

import (
	"strconv"
	"strings"

	"github.com/rmqio/rmq/broker/transaction"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/schedule"
)

// delayHook rewrites a message carrying DELAY > 0 onto SCHEDULE_TOPIC_XXXX
// (clamped to the highest level). Half messages are not delayed: their DELAY
// stays in the properties and applies when the transaction commits, which
// re-stores the message through this hook as a COMMIT-typed message.
func (b *Broker) delayHook(m *message.Message) error {
	if m.Topic == message.TopicTransHalf {
		return nil
	}
	if _, err := b.levels.Rewrite(m); err != nil {
		return remoting.Refuse(remoting.MessageIllegal, err.Error())
	}
	return nil
}

// delaySend reports a single send whose only hook is the delay hook and
// which that hook would move to a delay level (delayHook, Levels.Rewrite):
// no other hook acts (no transaction flag or property, no timer property,
// not a retry or system topic) and its DELAY names a level. send then
// stores it on SCHEDULE_TOPIC_XXXX queue level-1 with the producer's text
// edited (delayText) instead of a map; anything else (a refusal, DELAY=0,
// a prepared record included) takes the map path as before.
func (b *Broker) delaySend(sh *remoting.SendMessageRequestHeader) (level int, clamped bool) {
	switch {
	case sh.Batch, !b.hooksDecideByText(sh.Topic), strings.Contains(sh.Properties, message.PropTimerPrefix):
		return 0, false
	}
	p := message.Props(sh.Properties)
	if _, ok := p.Lookup(transaction.HookProperty); ok {
		return 0, false
	}
	level, clamped, err := b.levels.TextLevel(p, sh.SysFlag)
	if err != nil {
		return 0, false
	}
	return level, clamped
}

// delayText is the properties text of a delay-level send (delaySend) for
// queue queueID of its topic: the producer's pairs without WAIT, then
// CLUSTER and what Levels.Rewrite sets (DELAY when it clamped the level,
// REAL_TOPIC, REAL_QID), which, last, win over a producer's own.
func (b *Broker) delayText(sh *remoting.SendMessageRequestHeader, queueID int32, level int, clamped bool) string {
	drop := []string{message.PropWait, message.PropRealTopic, message.PropRealQueueID}
	set := [][2]string{{message.PropCluster, b.opts.BrokerClusterName}}
	if clamped {
		drop = append(drop, message.PropDelay)
		set = append(set, [2]string{message.PropDelay, strconv.Itoa(level)})
	}
	set = append(set, [2]string{message.PropRealTopic, sh.Topic}, [2]string{message.PropRealQueueID, strconv.FormatInt(int64(queueID), 10)})
	return message.EditProperties(sh.Properties, drop, set...)
}

// checkBatch refuses what stock refuses in a batch: a delay level or a
// transaction flag (sysFlag or TRAN_MSG) on any member (CommitLog.asyncPutMessages).
func checkBatch(msgs []*message.Message) error {
	for _, m := range msgs {
		level, err := schedule.DelayLevel(m.Properties)
		if err != nil || level > 0 {
			return remoting.Refusef(remoting.MessageIllegal, "batch messages of topic %s cannot carry a delay level", m.Topic)
		}
		if message.TransactionType(m.SysFlag) != 0 || remoting.JavaBool(m.Properties[transaction.HookProperty]) {
			return remoting.Refusef(remoting.MessageIllegal, "batch messages of topic %s cannot be transactional", m.Topic)
		}
	}
	return nil
}
