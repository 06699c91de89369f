package grpcapi

import (
	"context"
	"strings"
	"sync"
	"time"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/broker/transaction"
)

// maxTxEntries bounds the transaction table; the oldest entry goes first.
// A half message whose entry was dropped is still checked back, which adds
// it again.
const maxTxEntries = 1 << 16

// txDataExpire is ProxyConfig transactionDataExpireMillis: an entry older
// than this is not used (TransactionDataManager.pollNoExpireTransactionData),
// so an EndTransaction that comes later gets INVALID_TRANSACTION_ID and the
// transaction is settled by a check-back.
const txDataExpire = 30 * time.Second

// txData locates a half message for EndTransaction (the proxy's
// TransactionData): a 5.x client names a transaction by its id only.
type txData struct {
	tranStateTableOffset int64
	commitLogOffset      int64
	msgID                string
	at                   time.Time // added, on the broker clock
}

// txTable maps producer group (the topic) and transaction id to the half
// message, filled by transactional sends and by check-backs. The proxy keeps
// up to transactionDataMaxNum entries per transaction and ends the newest;
// one is kept here, the newest: after an EndTransaction took it, another one
// of the same transaction is refused rather than ending an older copy of the
// half message again.
type txTable struct {
	mu    sync.Mutex
	byKey map[string]txData
	order []string // insertion order, for eviction
}

func newTxTable() *txTable { return &txTable{byKey: make(map[string]txData)} }

func txKey(group, id string) string { return group + "\x00" + id }

func (t *txTable) add(group, id string, d txData) {
	k := txKey(group, id)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.byKey[k]; !ok {
		t.order = append(t.order, k)
	}
	t.byKey[k] = d
	for len(t.byKey) > maxTxEntries && len(t.order) > 0 {
		delete(t.byKey, t.order[0])
		t.order = t.order[1:]
	}
	if len(t.order) > 2*maxTxEntries { // compact keys already ended
		live := t.order[:0]
		for _, k := range t.order {
			if _, ok := t.byKey[k]; ok {
				live = append(live, k)
			}
		}
		t.order = live
	}
}

// take removes the entry of the transaction and returns it unless it is
// older than txDataExpire at now.
func (t *txTable) take(group, id string, now time.Time) (txData, bool) {
	k := txKey(group, id)
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.byKey[k]
	delete(t.byKey, k)
	if ok && now.Sub(d.at) > txDataExpire {
		return txData{}, false
	}
	return d, ok
}

// EndTransaction commits or rolls back a half message sent through this
// endpoint (or offered to its client by a check-back).
func (s *Server) EndTransaction(ctx context.Context, req *v2.EndTransactionRequest) (*v2.EndTransactionResponse, error) {
	// EndTransactionActivity checks the topic's name only: for a topic that
	// does not exist there is no transaction data.
	topic, err := s.topicName(req.GetTopic())
	if err != nil {
		return &v2.EndTransactionResponse{Status: toStatus(err)}, nil
	}
	if strings.TrimSpace(req.GetTransactionId()) == "" {
		return &v2.EndTransactionResponse{Status: toStatus(fail(v2.Code_INVALID_TRANSACTION_ID, "transaction id cannot be empty"))}, nil
	}
	var commit bool
	switch req.GetResolution() {
	case v2.TransactionResolution_COMMIT:
		commit = true
	case v2.TransactionResolution_ROLLBACK:
	default:
		// Still unknown: the half message waits for the next check, as
		// with an UNKNOW END_TRANSACTION.
		return &v2.EndTransactionResponse{Status: okStatus()}, nil
	}
	d, ok := s.txs.take(topic, req.GetTransactionId(), s.now())
	if !ok {
		return &v2.EndTransactionResponse{Status: toStatus(fail(v2.Code_INVALID_TRANSACTION_ID, "cannot found transaction data"))}, nil
	}
	if err := s.b.Transactions().End(topic, d.tranStateTableOffset, d.commitLogOffset, commit,
		req.GetSource() == v2.TransactionSource_SOURCE_SERVER_CHECK, d.msgID); err != nil {
		return &v2.EndTransactionResponse{Status: toStatus(err)}, nil
	}
	return &v2.EndTransactionResponse{Status: okStatus()}, nil
}

// Check implements transaction.Checker: a check-back goes to a producer
// publishing the group's topic (the proxy's producer group is the topic) as
// RecoverOrphanedTransactionCommand on its Telemetry stream.
func (s *Server) Check(c transaction.Check) bool {
	sess := s.clients.producerOf(c.Group)
	if sess == nil {
		return false
	}
	s.txs.add(c.Group, c.TransactionID, txData{
		tranStateTableOffset: c.TranStateTableOffset, commitLogOffset: c.CommitLogOffset,
		msgID: c.TransactionID, at: s.now(),
	})
	cmd := &v2.TelemetryCommand{Command: &v2.TelemetryCommand_RecoverOrphanedTransactionCommand{
		RecoverOrphanedTransactionCommand: &v2.RecoverOrphanedTransactionCommand{
			Message: toProtoMessage(c.Message), TransactionId: c.TransactionID,
		},
	}}
	go func() {
		if err := sess.send(cmd); err != nil {
			s.log.Warn().Err(err).Str("client", sess.id).Msg("grpc: transaction check not delivered")
		}
	}()
	return true
}
