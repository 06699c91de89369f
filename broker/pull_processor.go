package broker

import (
	"fmt"
	"strings"
	"time"

	"github.com/rmqio/rmq/broker/clients"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// Pull sysFlag bits (PullSysFlag.java).
const (
	pullFlagCommitOffset = 0x1
	pullFlagSuspend      = 0x2
	pullFlagSubscription = 0x4
	pullFlagClassFilter  = 0x8
	pullFlagLitePull     = 0x10
)

// maxSuspend caps a long poll so the answer beats the clients' 30 s socket
// timeouts (Java push holds 15 s, Go 20 s).
const maxSuspend = 20 * time.Second

const (
	subAll = "*"
)

// getStatusNames are the GetMessageStatus names Java puts in the pull remark.
var getStatusNames = map[store.GetStatus]string{
	store.Found:               "FOUND",
	store.NoMatchedMessage:    "NO_MATCHED_MESSAGE",
	store.MessageWasRemoving:  "MESSAGE_WAS_REMOVING",
	store.OffsetFoundNull:     "OFFSET_FOUND_NULL",
	store.OffsetOverflowBadly: "OFFSET_OVERFLOW_BADLY",
	store.OffsetOverflowOne:   "OFFSET_OVERFLOW_ONE",
	store.OffsetTooSmall:      "OFFSET_TOO_SMALL",
	store.NoMatchedLogicQueue: "NO_MATCHED_LOGIC_QUEUE",
	store.NoMessageInQueue:    "NO_MESSAGE_IN_QUEUE",
}

// pullHeader is PullMessageRequestHeader.
type pullHeader = remoting.PullMessageRequestHeader

func parsePullHeader(req *remoting.Command) (*pullHeader, error) {
	ph, err := remoting.DecodeHeader[pullHeader](req)
	return &ph, err
}

// tagFilter matches consume-queue tagsCodes against a TAG subscription.
type tagFilter struct {
	all   bool
	codes map[int32]struct{}
}

// allTags is the filter of "*" and of an empty expression, shared: a filter
// is never changed once built, and most pulls subscribe to everything.
var allTags = &tagFilter{all: true}

// match compares as Java does: codeSet.contains(tagsCode.intValue()).
func (f *tagFilter) match(tagsCode int64) bool {
	if f.all {
		return true
	}
	_, ok := f.codes[int32(tagsCode)]
	return ok
}

// tagFilterFromExpression parses "a || b" as FilterAPI.buildSubscriptionData;
// empty or "*" selects everything.
func tagFilterFromExpression(expr string) *tagFilter {
	if expr == "" || expr == subAll {
		return allTags
	}
	f := &tagFilter{codes: make(map[int32]struct{})}
	for _, tag := range strings.Split(expr, "||") {
		if tag = strings.TrimSpace(tag); tag != "" {
			f.codes[int32(message.TagsHash(tag))] = struct{}{}
		}
	}
	return f
}

// tagFilterFromSubscription uses a heartbeat subscription. The client's
// codeSet is trusted like stock; the tags it names are hashed here too, so a
// client hashing differently still gets its messages (clients re-filter).
func tagFilterFromSubscription(sub *remoting.SubscriptionData) *tagFilter {
	if sub.ClassFilterMode || sub.SubString == "" || sub.SubString == subAll {
		return allTags
	}
	f := &tagFilter{codes: make(map[int32]struct{}, len(sub.CodeSet)+len(sub.TagsSet))}
	for _, c := range sub.CodeSet {
		f.codes[int32(c)] = struct{}{}
	}
	for _, tag := range sub.TagsSet {
		f.codes[int32(message.TagsHash(tag))] = struct{}{}
	}
	return f
}

// checkFilterData refuses a pull by a property filter the heartbeats did not
// register (no filter, or one older than the client's subVersion).
func checkFilterData(fd *clients.FilterData, subVersion int64) (int32, string) {
	if fd == nil {
		return remoting.FilterDataNotExist, "The broker's consumer filter data is not exist!Your expression may be wrong!"
	}
	if fd.ClientVersion < subVersion {
		return remoting.FilterDataNotLatest, "the consumer's consumer filter data not latest"
	}
	return remoting.Success, ""
}

// pullFilterFor picks the subscription of a pull and builds its filter, with
// the checks of PullMessageProcessor in Java's order. With the subscription
// flag the header carries the expression (FilterAPI.build: an empty non-tag
// expression is SUBSCRIPTION_PARSE_FAILED; see headerExpression for one that
// does not compile).
// Without it the heartbeat's subscription is used, and for a property filter
// the filter registered from the heartbeats must exist and be as new as the
// client's subscription. Only then is enablePropertyFilter checked.
func (b *Broker) pullFilterFor(ph *pullHeader) (*pullFilter, int32, string) {
	pf := &pullFilter{filters: b.clients.Filters}
	var exprType string
	if ph.SysFlag&pullFlagSubscription != 0 {
		exprType = ph.ExpressionType
		if clients.IsTagType(exprType) {
			pf.tags = tagFilterFromExpression(ph.Subscription)
		} else {
			if ph.Subscription == "" {
				return nil, remoting.SubscriptionParseFailed, "parse the consumer's subscription failed"
			}
			var code int32
			var remark string
			if pf.expr, code, remark = b.headerExpression(exprType, ph.Subscription); code != remoting.Success {
				return nil, code, remark
			}
		}
	} else {
		// UPDATE_AND_GET_GROUP_FORBIDDEN's read ban applies, as in J5
		// PullMessageProcessor, only to pulls without the subscription flag,
		// once the group is online.
		if b.clients.SubGroups.Forbidden(ph.ConsumerGroup, ph.Topic, clients.PermReadIndex) &&
			b.clients.Consumers.SubscriptionCount(ph.ConsumerGroup) > 0 {
			return nil, remoting.NoPermission, "the consumer group[" + ph.ConsumerGroup + "] is forbidden for topic[" + ph.Topic + "]"
		}
		sub := b.clients.Consumers.FindSubscription(ph.ConsumerGroup, ph.Topic)
		if sub == nil {
			return nil, remoting.SubscriptionNotExist, "the consumer's subscription not exist" + faqSuggestion
		}
		if sub.SubVersion < ph.SubVersion {
			return nil, remoting.SubscriptionNotLatest, "the consumer's subscription not latest"
		}
		exprType = sub.ExpressionType
		if clients.IsTagType(exprType) {
			pf.tags = tagFilterFromSubscription(sub)
		} else {
			fd := b.clients.Filters.Get(ph.Topic, ph.ConsumerGroup)
			if code, remark := checkFilterData(fd, ph.SubVersion); code != remoting.Success {
				return nil, code, remark
			}
			pf.expr = fd.Compiled
		}
	}
	rc := b.runtime()
	if !clients.IsTagType(exprType) && !rc.EnablePropertyFilter {
		return nil, remoting.SystemError, "The broker does not support consumer to filter message by " + exprType
	}
	if rc.FilterSupportRetry && message.IsRetryTopic(ph.Topic) {
		pf.retryGroup = strings.TrimPrefix(ph.Topic, message.RetryTopicPrefix)
	}
	return pf, remoting.Success, ""
}

// processPullRequest serves PULL_MESSAGE and LITE_PULL_MESSAGE.
func (b *Broker) processPullRequest(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	return b.processPull(c, req, true)
}

// processPull is PullMessageProcessor.processRequest. allowSuspend is false
// when a held request is re-run: it then neither parks again nor commits
// the offset a second time.
func (b *Broker) processPull(c *remoting.Conn, req *remoting.Command, allowSuspend bool) *remoting.Command {
	ph, err := parsePullHeader(req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	return b.pull(c, req, ph, nil, allowSuspend)
}

// servePullInline serves on the event loop a pull the store can answer
// from memory, which saves the pool hand-off and a goroutine wake-up per
// request (and the loop's wake-up for the answer):
//   - a consumer that has caught up: its offset is the queue's end, so the
//     store answers from memory (no commitlog read) and the pull is parked,
//     or answered with what was dispatched in between (just written, still
//     mapped). Such pulls are most of a long-polling consumer's requests
//     when it keeps up: a held pull answered with one message is followed by
//     one that finds nothing;
//   - a consumer behind the end (draining a backlog) whose subscription
//     takes every message, when the consume-queue units and the commitlog
//     span the pull reads are in the page cache (store.ReadResident). A
//     filtered pull may scan further than the units checked, and a read of
//     pages not cached would wait for the disk: both go to the pool.
//
// A group that does not exist yet (creating it persists the group table),
// ACL checks and shutdown are left to ServeRemoting.
func (b *Broker) servePullInline(c *remoting.Conn, req *remoting.Command) (*remoting.Command, bool) {
	if b.acl != nil || b.auth.Checks() {
		return nil, false
	}
	ph, err := parsePullHeader(req)
	if err != nil || b.clients.SubGroups.Find(ph.ConsumerGroup) == nil {
		return nil, false
	}
	var pf *pullFilter // built by the residency check, reused by pull
	if b.store.MaxOffsetInQueue(ph.Topic, ph.QueueID) != ph.QueueOffset {
		if pf = b.residentPullFilter(ph); pf == nil {
			return nil, false
		}
	}
	if !b.enter() {
		return nil, false
	}
	defer b.inflight.Done()
	if d := b.bstats.Detail(); d != nil {
		return b.timedServe(d, func(c *remoting.Conn, req *remoting.Command) *remoting.Command {
			return b.pull(c, req, ph, pf, true)
		}, c, req), true
	}
	return b.pull(c, req, ph, pf, true), true
}

// residentPullFilter returns the filter of the pull ph, behind its queue's
// end, when the pull takes every message and reads only pages in memory
// (servePullInline); nil otherwise.
func (b *Broker) residentPullFilter(ph *pullHeader) *pullFilter {
	pf, code, _ := b.pullFilterFor(ph)
	if code != remoting.Success || !pf.acceptsAll() {
		return nil
	}
	maxMsgs, maxBytes := b.pullLimits(ph, b.runtime())
	if !b.store.ReadResident(ph.Topic, ph.QueueID, ph.QueueOffset, maxMsgs, maxBytes) {
		return nil
	}
	return pf
}

// pullLimits is how many messages and about how many bytes one pull
// returns: what the client asks for, within maxTransferCountOnMessageInMemory
// and maxTransferBytesOnMessageInMemory, or the smaller ...InDisk pair (8,
// 64 KiB) when the pull starts beyond the in-memory window
// (accessMessageInMemoryMaxRatio), as stock isTheBatchFull: a consumer far
// behind takes small batches from the disk. Stock decides per message; the
// messages after the first are newer, so deciding by the first differs at
// most for the one batch that crosses the window's edge.
func (b *Broker) pullLimits(ph *pullHeader, rc *runtimeConfig) (maxMsgs, maxBytes int) {
	count, bytes := rc.MaxTransferCountOnMessageInMemory, rc.MaxTransferBytesOnMessageInMemory
	if phy, ok := b.store.CommitLogOffsetOf(ph.Topic, ph.QueueID, ph.QueueOffset); ok && b.onDisk(phy) {
		count, bytes = rc.MaxTransferCountOnMessageInDisk, rc.MaxTransferBytesOnMessageInDisk
	}
	return max(1, min(int(ph.MaxMsgNums), count)), bytes
}

// pull serves a pull whose header parsed; pf is its filter when the caller
// built it already (servePullInline), nil to build it here.
func (b *Broker) pull(c *remoting.Conn, req *remoting.Command, ph *pullHeader, pf *pullFilter, allowSuspend bool) *remoting.Command {
	resp := remoting.NewResponse(req, remoting.Success, "")
	fail := func(code int32, remark string) *remoting.Command {
		resp.Code, resp.Remark = code, remark
		return resp
	}
	rc := b.runtime()
	if rc.BrokerPermission&topicgroup.PermRead == 0 {
		return fail(remoting.NoPermission, fmt.Sprintf("the broker[%s] pulling message is forbidden", b.opts.BrokerIP1))
	}
	if err := message.ValidateGroup(ph.ConsumerGroup); err != nil {
		return remoting.ErrorResponse(req, err)
	}
	group := b.clients.SubGroups.FindOrCreate(ph.ConsumerGroup)
	if group == nil {
		return fail(remoting.SubscriptionGroupNotExist, fmt.Sprintf("subscription group [%s] does not exist, %s", ph.ConsumerGroup, faqSuggestion))
	}
	if !group.ConsumeEnable {
		return fail(remoting.NoPermission, "subscription group no permission, "+ph.ConsumerGroup)
	}
	tc, ok := b.topics.Lookup(ph.Topic)
	if !ok {
		return fail(remoting.TopicNotExist, fmt.Sprintf("topic[%s] not exist, apply first please! %s", ph.Topic, faqSuggestion))
	}
	if tc.Perm&topicgroup.PermRead == 0 {
		return fail(remoting.NoPermission, "the topic["+ph.Topic+"] pulling message is forbidden")
	}
	if ph.QueueID < 0 || ph.QueueID >= tc.ReadQueueNums {
		return fail(remoting.SystemError, fmt.Sprintf("queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[/%s]",
			ph.QueueID, ph.Topic, tc.ReadQueueNums, c.RemoteAddr()))
	}

	if pf == nil {
		var code int32
		var remark string
		if pf, code, remark = b.pullFilterFor(ph); code != remoting.Success {
			return fail(code, remark)
		}
	}

	if b.lmqPullRefused(ph.Topic) {
		return fail(remoting.SystemError, "store getMessage return null")
	}
	maxMsgs, maxBytes := b.pullLimits(ph, rc)
	begin := b.clock.Now()
	res := b.store.GetMessageFiltered(ph.Topic, ph.QueueID, ph.QueueOffset, maxMsgs, maxBytes, pf)
	resp.Remark = getStatusNames[res.Status]
	rh := remoting.PullMessageResponseHeader{NextBeginOffset: res.NextBeginOffset, MinOffset: res.MinOffset, MaxOffset: res.MaxOffset}
	resp.Code = pullCode(res.Status, ph.QueueOffset)
	b.suggestBroker(ph, res, group, rc, &rh, &resp.Code)
	rh.Encode(resp)
	if d := b.bstats.Detail(); d != nil && resp.Code == remoting.Success {
		d.RecordPulled(ph.Topic, ph.ConsumerGroup, ph.QueueID, res.NextBeginOffset)
	}

	switch resp.Code {
	case remoting.Success:
		resp.Body = res.Body()
		// The body's buffer goes back to the store once the frame is copied
		// out for the socket.
		resp.OnWritten(res.Release)
		b.stats.GetMsgs.Add(int64(len(res.Messages)))
		b.bstats.RecordGet(ph.Topic, ph.ConsumerGroup, len(res.Messages), len(resp.Body))
		b.bstats.RecordGetLatency(ph.Topic, ph.ConsumerGroup, ph.QueueID, b.clock.Now().Sub(begin))
	case remoting.PullNotFound:
		if allowSuspend && ph.SysFlag&pullFlagSuspend != 0 {
			hold := time.Duration(rc.ShortPollingTimeMills) * time.Millisecond
			if rc.LongPollingEnable {
				hold = min(time.Duration(max(ph.SuspendTimeoutMillis, 0))*time.Millisecond, maxSuspend)
			}
			b.pullHold.suspend(&heldPull{
				conn: c, req: req, topic: ph.Topic, queueID: ph.QueueID, offset: ph.QueueOffset,
				match: pf.MatchTags, matchProps: pf.arrivalMatcher(), deadline: b.clock.Now().Add(hold),
			}, b.store.MaxOffsetInQueue)
			resp = nil
		}
	case remoting.PullOffsetMoved:
		b.log.Info().Object("client", c).Str("group", ph.ConsumerGroup).Str("topic", ph.Topic).Int32("queueId", ph.QueueID).
			Int64("requestOffset", ph.QueueOffset).Int64("newOffset", res.NextBeginOffset).Msg("pull offset moved")
	}

	// A slave never stores the offset a pull commits (the Java client
	// clears the flag for pulls to a slave anyway): its offsets are the
	// master's, copied by SlaveSynchronize, and UPDATE_CONSUMER_OFFSET's.
	if allowSuspend && ph.SysFlag&pullFlagCommitOffset != 0 && !b.isSlave() {
		b.clients.Offsets.Commit(ph.ConsumerGroup, ph.Topic, ph.QueueID, ph.CommitOffset)
	}
	return resp
}

// pullCode maps a store status to the stock pull response code.
func pullCode(s store.GetStatus, requestOffset int64) int32 {
	switch s {
	case store.Found:
		return remoting.Success
	case store.MessageWasRemoving, store.NoMatchedMessage:
		return remoting.PullRetryImmediately
	case store.NoMatchedLogicQueue, store.NoMessageInQueue:
		if requestOffset != 0 {
			return remoting.PullOffsetMoved
		}
		return remoting.PullNotFound
	case store.OffsetFoundNull, store.OffsetOverflowOne:
		return remoting.PullNotFound
	case store.OffsetOverflowBadly, store.OffsetTooSmall:
		return remoting.PullOffsetMoved
	}
	return remoting.SystemError
}

// wakePull re-runs a held pull and writes its answer, unless the broker is
// shutting down or the client went away.
func (b *Broker) wakePull(hp *heldPull) {
	if hp.conn.Closed() || !b.enter() {
		return
	}
	defer b.inflight.Done()
	resp := b.processPull(hp.conn, hp.req, false)
	if resp == nil {
		return
	}
	if err := hp.conn.WriteResponse(resp); err != nil {
		b.log.Debug().Err(err).Object("client", hp.conn).Msg("held pull answer not delivered")
	}
}

// suggestBroker sets suggestWhichBrokerId, and on a SLAVE the offsets and
// code of a pull whose offset is out of the slave's range, as 4.9.8's
// PullMessageProcessor and DefaultMessageStore.getMessage do:
//
//   - without slaveReadEnable the suggestion is always the master (0);
//   - with it, the group's whichBrokerWhenConsumeSlowly when the pull reads
//     further behind the commitlog's end than accessMessageInMemoryMaxRatio
//     of the RAM (the consumer is slow: its reads would evict the page
//     cache of the master's writes), else the group's brokerId;
//   - on a slave without offsetCheckInSlave, an out-of-range offset is not
//     corrected (nextOffsetCorrection: nextBeginOffset stays the requested
//     offset), and PULL_OFFSET_MOVED becomes PULL_RETRY_IMMEDIATELY
//     suggesting the group's brokerId: the slave may just be behind.
//
// 4.9.8 also sets PULL_RETRY_IMMEDIATELY for every pull on a slave without
// slaveReadEnable, but the status switch that follows overwrites the code,
// so a 4.9.8 slave serves such pulls (suggesting the master, where the
// client goes next); the Java client relies on it when the master is down.
// rmq does the same. 5.3.3 refuses them (SYSTEM_BUSY, rejectRequest).
func (b *Broker) suggestBroker(ph *pullHeader, res *store.GetResult, group *topicgroup.SubscriptionGroupConfig, rc *runtimeConfig, rh *remoting.PullMessageResponseHeader, code *int32) {
	if rc.SlaveReadEnable {
		rh.SuggestWhichBrokerID = group.BrokerID
		if b.pullIsSlow(ph, res) {
			rh.SuggestWhichBrokerID = group.WhichBrokerWhenConsumeSlowly
		}
	}
	if !b.isSlave() || rc.OffsetCheckInSlave {
		return
	}
	switch res.Status {
	case store.Found, store.NoMatchedMessage, store.MessageWasRemoving:
	default:
		rh.NextBeginOffset = ph.QueueOffset
	}
	if *code == remoting.PullOffsetMoved {
		*code = remoting.PullRetryImmediately
		rh.SuggestWhichBrokerID = group.BrokerID
	}
}

// pullIsSlow is GetMessageResult.suggestPullingFromSlave: the last unit the
// pull read points further behind the commitlog's end than the in-memory
// window (onDisk). Only a read that examined units has it.
func (b *Broker) pullIsSlow(ph *pullHeader, res *store.GetResult) bool {
	if res.Status != store.Found && res.Status != store.NoMatchedMessage {
		return false
	}
	phy, ok := b.store.CommitLogOffsetOf(ph.Topic, ph.QueueID, res.NextBeginOffset-1)
	return ok && b.onDisk(phy)
}
