package broker

import (
	"bufio"
	"container/heap"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker/clients"
	"github.com/rmqio/rmq/filter"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// Pull: PULL_MESSAGE and LITE_PULL_MESSAGE (doc.go: Request paths) and the
// queries a consumer makes of queue offsets, in four parts:
//
//	the request     processPull, servePullInline (the event-loop mode), pull
//	the filter      pullFilter: tags, SQL92, retry expressions
//	long polling    PullRequestHoldService: parked pulls, woken by dispatch
//	offset queries  GET_MAX/MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, …

// ----- The request -----

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

// ----- The filter of one pull -----

// pullFilter is the store.MessageFilter of one pull: Java's
// ExpressionMessageFilter, or ExpressionForRetryMessageFilter when
// filterSupportRetry is on. Tag subscriptions are decided on the consume
// queue's tagsCode; SQL92 subscriptions on the record's properties text,
// read in place: the filter is itself the filter.Properties the expression
// reads, so matching a message allocates nothing.
type pullFilter struct {
	// tags decides on the tagsCode; nil lets every unit through to MatchProps
	// (a property filter: rmq keeps no bloom bit maps).
	tags *tagFilter
	// expr is the subscription's compiled SQL92 filter; nil matches every
	// message (a tag subscription, or no compiled filter, as in Java).
	expr *filter.Expression
	// retryGroup is set when the pulled topic is %RETRY%<group> and
	// filterSupportRetry is on: each message is matched by the group's filter
	// of its original topic (property RETRY_TOPIC), if it has one.
	retryGroup string
	filters    *clients.ConsumerFilterManager

	// The last original topic seen on a retry topic and its expression.
	lastTopic string
	lastExpr  *filter.Expression
	lastOK    bool

	props message.Props // the properties being matched, valid during MatchProps
}

// acceptsAll reports whether the filter lets every message through: a tag
// subscription of everything, no property filter, and no retry topic whose
// messages are matched by their original topic's filter.
func (f *pullFilter) acceptsAll() bool {
	return f.tags != nil && f.tags.all && f.expr == nil && f.retryGroup == ""
}

// MatchTags is isMatchedByConsumeQueue.
func (f *pullFilter) MatchTags(tagsCode int64) bool { return f.tags == nil || f.tags.match(tagsCode) }

// MatchProps is isMatchedByCommitLog: only TRUE delivers; NULL, FALSE and an
// evaluation that throws in Java do not.
func (f *pullFilter) MatchProps(p message.Props) bool {
	expr := f.expr
	if f.retryGroup != "" {
		expr = f.retryExpression(p)
	}
	if expr == nil {
		return true
	}
	f.props = p
	ok := expr.Match(f)
	f.props = ""
	return ok
}

// arrivalMatcher returns MatchProps for the hold service to check arriving
// messages with, or nil when the properties do not matter (a tag filter).
// The held pull's filter is used by the store's dispatcher alone from then on.
func (f *pullFilter) arrivalMatcher() func(message.Props) bool {
	if f.expr == nil && f.retryGroup == "" {
		return nil
	}
	return f.MatchProps
}

// Get is filter.Properties over the record's properties text: every property,
// system keys such as TAGS and KEYS included, as Java's
// MessageEvaluationContext sees them.
func (f *pullFilter) Get(key string) (string, bool) { return f.props.Lookup(key) }

// retryExpression finds the filter of a retry message's original topic. A
// message without RETRY_TOPIC, or whose topic has no filter of the group,
// passes (Java: no filter data, every message matches).
func (f *pullFilter) retryExpression(p message.Props) *filter.Expression {
	topic, ok := p.Lookup(message.PropRetryTopic)
	if !ok {
		return nil
	}
	if !f.lastOK || topic != f.lastTopic {
		// topic aliases the record; the memo keeps a copy.
		f.lastTopic, f.lastOK, f.lastExpr = strings.Clone(topic), true, nil
		if d := f.filters.Get(f.lastTopic, f.retryGroup); d != nil {
			f.lastExpr = d.Compiled
		}
	}
	return f.lastExpr
}

// headerExpression compiles the SQL92 expression a pull carries in its
// header. An expression that does not compile leaves no filter, as on the
// stock broker (ConsumerFilterManager.build returns null and the pull goes on:
// every message matches). One over filter's limits is refused instead with
// the code stock gives a subscription it cannot parse: Java has no limit and
// would filter by it (or overflow its stack and filter nothing), and
// delivering everything to a consumer that asked for a filter is worse than
// telling it why not.
func (b *Broker) headerExpression(exprType, expr string) (*filter.Expression, int32, string) {
	e, err := b.clients.Filters.Compile(exprType, expr)
	if errors.Is(err, filter.ErrLimit) {
		return nil, remoting.SubscriptionParseFailed, "parse the consumer's subscription failed: " + err.Error()
	}
	return e, remoting.Success, ""
}

// ----- Long polling -----

// heldPull is a parked long-polling pull.
type heldPull struct {
	conn    *remoting.Conn
	req     *remoting.Command
	topic   string
	queueID int32
	// offset is the queue offset the client asked for: any message at or past
	// it that passes match ends the wait.
	offset int64
	match  func(tagsCode int64) bool
	// matchProps, when set, also decides on the new message's properties
	// (a SQL92 filter; Java's isMatchedByCommitLog in notifyMessageArriving).
	matchProps func(message.Props) bool
	deadline   time.Time
	heapIdx    int
}

type queueKey struct {
	topic   string
	queueID int32
}

// PullRequestHoldService parks pulls that found nothing until a message for
// their queue arrives or their hold time ends. Arrivals come from the store's
// dispatch (notify); one goroutine sleeps until the earliest deadline. Every
// held pull is in exactly one per-queue waiter list and in the deadline heap,
// and leaves both together, so it is answered at most once.
type PullRequestHoldService struct {
	clock clock.Clock
	log   zerolog.Logger
	// wake re-runs a pull; it is called on a waker goroutine (or a fresh
	// one), never under mu.
	wake func(*heldPull)
	// wakeq feeds the wakers, long-lived goroutines that run wake: a
	// goroutine per re-run costs its creation and the growth of its new
	// stack, as deep as a pull's read (morestack and copystack took 3 % of
	// the broker's CPU delivering timers). wakersOn is set while they run
	// (from start to shutdown).
	wakeq    chan *heldPull
	wakersOn atomic.Bool
	wakers   sync.WaitGroup

	mu      sync.Mutex
	queues  map[queueKey][]*heldPull
	byDue   holdHeap
	stopped bool

	kick    chan struct{} // capacity 1: the earliest deadline changed
	quit    chan struct{}
	done    chan struct{}
	running bool
}

func newPullRequestHoldService(clk clock.Clock, log zerolog.Logger, wake func(*heldPull)) *PullRequestHoldService {
	return &PullRequestHoldService{
		clock: clk, log: log, wake: wake,
		queues: make(map[queueKey][]*heldPull),
		kick:   make(chan struct{}, 1),
		wakeq:  make(chan *heldPull, holdWakeQLen),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
}

// Wakers and the queue they take re-runs from. A waker runs one re-run at
// a time, and a re-run may read the disk, so there are a few; when all are
// busy and the queue is full, a re-run gets a goroutine of its own.
const (
	holdWakers   = 4
	holdWakeQLen = 256
)

// start runs the deadline goroutine and the wakers.
func (s *PullRequestHoldService) start() {
	s.mu.Lock()
	s.running = true
	s.mu.Unlock()
	for range holdWakers {
		s.wakers.Add(1)
		go s.waker()
	}
	s.wakersOn.Store(true)
	go s.run()
}

// waker re-runs the pulls queued by wakeOne until shutdown.
func (s *PullRequestHoldService) waker() {
	defer s.wakers.Done()
	for {
		select {
		case hp := <-s.wakeq:
			s.wake(hp)
		case <-s.quit:
			return
		}
	}
}

// wakeOne hands hp, taken out of the service, to a waker, or to a
// goroutine of its own when none runs or all are busy and their queue is
// full.
func (s *PullRequestHoldService) wakeOne(hp *heldPull) {
	if s.wakersOn.Load() {
		select {
		case s.wakeq <- hp:
			return
		default:
		}
	}
	go s.wake(hp)
}

// shutdown stops the deadline goroutine and drops every held pull unanswered
// (their connections are closing with the server).
func (s *PullRequestHoldService) shutdown() {
	s.mu.Lock()
	running := s.running
	s.running = false
	s.stopped = true
	s.queues = make(map[queueKey][]*heldPull)
	s.byDue = nil
	s.mu.Unlock()
	if running {
		s.wakersOn.Store(false)
		close(s.quit)
		<-s.done
		s.wakers.Wait()
	}
}

// suspend parks hp. A message may have been dispatched between the pull's
// read of the store and this call, with nobody waiting for it yet; so after
// parking, maxOffset is read again and a queue already past hp.offset wakes
// hp at once (the re-run then finds the message, or skips filtered ones).
func (s *PullRequestHoldService) suspend(hp *heldPull, maxOffset func(topic string, queueID int32) int64) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	key := queueKey{hp.topic, hp.queueID}
	s.queues[key] = append(s.queues[key], hp)
	heap.Push(&s.byDue, hp)
	earliest := s.byDue[0] == hp
	s.mu.Unlock()
	if earliest {
		s.poke()
	}
	if maxOffset(hp.topic, hp.queueID) > hp.offset && s.take(hp) {
		s.wakeOne(hp)
	}
}

func (s *PullRequestHoldService) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// notify reports that the queue now holds messages below maxOffset, the
// newest with tagsCode and props. Waiters behind maxOffset whose filter
// accepts the tag (and the properties) wake; the rest keep waiting. Called in the store's dispatcher
// (possibly on an event loop): it only takes the lock briefly and never runs a pull itself.
func (s *PullRequestHoldService) notify(topic string, queueID int32, maxOffset, tagsCode int64, props message.Props) {
	s.wakeAll(s.collect(topic, queueID, maxOffset, tagsCode, props, nil))
}

// collect is notify without the wake-up: the waiters notify would wake are
// taken out of the service and appended to woken, for wakeAll to wake later
// (the broker does so once per dispatch batch). A taken waiter is answered
// only by whoever holds it, so it must be passed to wakeAll.
func (s *PullRequestHoldService) collect(topic string, queueID int32, maxOffset, tagsCode int64, props message.Props, woken []*heldPull) []*heldPull {
	key := queueKey{topic, queueID}
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.queues[key]
	if len(list) == 0 {
		return woken
	}
	n := len(woken)
	var keep []*heldPull
	for _, hp := range list {
		if maxOffset > hp.offset && hp.match(tagsCode) && (hp.matchProps == nil || hp.matchProps(props)) {
			heap.Remove(&s.byDue, hp.heapIdx)
			woken = append(woken, hp)
		} else {
			keep = append(keep, hp)
		}
	}
	if len(woken) > n {
		s.setQueueLocked(key, keep)
	}
	return woken
}

// wakeAll re-runs each pull collect took (wakeOne).
func (s *PullRequestHoldService) wakeAll(woken []*heldPull) {
	for _, hp := range woken {
		s.wakeOne(hp)
	}
}

// dropConn forgets every pull held for c (the client is gone).
func (s *PullRequestHoldService) dropConn(c *remoting.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, list := range s.queues {
		keep := list[:0:0]
		for _, hp := range list {
			if hp.conn == c {
				heap.Remove(&s.byDue, hp.heapIdx)
			} else {
				keep = append(keep, hp)
			}
		}
		if len(keep) != len(list) {
			s.setQueueLocked(key, keep)
		}
	}
}

// take removes hp if it is still held; false means someone else woke it.
func (s *PullRequestHoldService) take(hp *heldPull) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.takeLocked(hp)
}

func (s *PullRequestHoldService) takeLocked(hp *heldPull) bool {
	key := queueKey{hp.topic, hp.queueID}
	list := s.queues[key]
	for i, x := range list {
		if x == hp {
			keep := make([]*heldPull, 0, len(list)-1)
			keep = append(keep, list[:i]...)
			keep = append(keep, list[i+1:]...)
			s.setQueueLocked(key, keep)
			heap.Remove(&s.byDue, hp.heapIdx)
			return true
		}
	}
	return false
}

func (s *PullRequestHoldService) setQueueLocked(key queueKey, list []*heldPull) {
	if len(list) == 0 {
		delete(s.queues, key)
		return
	}
	s.queues[key] = list
}

// held is the number of parked pulls.
func (s *PullRequestHoldService) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byDue)
}

// run wakes pulls whose hold time ended. It sleeps until the earliest
// deadline, or until suspend parks a pull due earlier than that.
func (s *PullRequestHoldService) run() {
	defer close(s.done)
	for {
		s.mu.Lock()
		now := s.clock.Now()
		var expired []*heldPull
		for len(s.byDue) > 0 && !s.byDue[0].deadline.After(now) {
			hp := s.byDue[0]
			s.takeLocked(hp)
			expired = append(expired, hp)
		}
		wait := time.Duration(-1)
		if len(s.byDue) > 0 {
			wait = s.byDue[0].deadline.Sub(now)
		}
		s.mu.Unlock()
		for _, hp := range expired {
			s.wakeOne(hp)
		}

		var timer clock.Timer
		var fire <-chan time.Time
		if wait >= 0 {
			timer = s.clock.NewTimer(wait)
			fire = timer.C()
		}
		select {
		case <-fire:
		case <-s.kick:
		case <-s.quit:
			if timer != nil {
				timer.Stop()
			}
			return
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// holdHeap orders held pulls by deadline.
type holdHeap []*heldPull

func (h holdHeap) Len() int           { return len(h) }
func (h holdHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h holdHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}
func (h *holdHeap) Push(x any) {
	hp := x.(*heldPull)
	hp.heapIdx = len(*h)
	*h = append(*h, hp)
}
func (h *holdHeap) Pop() any {
	old := *h
	n := len(old)
	hp := old[n-1]
	old[n-1] = nil
	hp.heapIdx = -1
	*h = old[:n-1]
	return hp
}

// ----- Offset and time queries -----

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
