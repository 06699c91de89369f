package broker

import (
	"errors"
	"strings"

	"github.com/rmqio/rmq/broker/clients"
	"github.com/rmqio/rmq/filter"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

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
