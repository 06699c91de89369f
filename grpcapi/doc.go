// Package grpcapi is the gRPC endpoint of the broker process for the
// RocketMQ 5.x SDKs: apache.rocketmq.v2.MessagingService (the generated
// types of github.com/apache/rocketmq-clients/golang/v5/protocol/v2) as a
// thin adapter over the broker's Go API (broker.Put, the topic table,
// transaction.Service End/SetChecker), in the role of the stock proxy's
// local mode.
//
// One port (grpcServerPort, 8081) serves TLS and plaintext: a connection
// whose first byte is 0x16 (a TLS handshake record) gets TLS with the
// configured or a self-signed certificate, any other plaintext HTTP/2 (the
// proxy's permissive mode).
//
// Served: QueryRoute, Heartbeat, SendMessage (normal, FIFO by message
// group hash, delivery timestamp as TIMER_DELIVER_MS, transactional as a
// half message), EndTransaction, Telemetry (Settings exchange; check-backs
// as RecoverOrphanedTransactionCommand), NotifyClientTermination,
// QueryAssignment, and consumption over broker/pop (the proxy's
// ConsumerProcessor over POP_MESSAGE and friends): ReceiveMessage (server
// streaming: status, messages, delivery timestamp; long polling within the
// client's deadline; FIFO groups pop orderly; TAG and SQL92 filters),
// AckMessage, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue.
// A receipt handle is the broker's extraInfo plus the commitlog offset
// (common/consumer/ReceiptHandle). Messages received with auto_renew (push
// consumers) are popped for defaultInvisibleTimeMills and renewed until
// acked, as the proxy's DefaultReceiptHandleManager does (renew.go). The
// pinned protocol version has no RecallMessage.
//
// Every refusal is an apache.rocketmq.v2.Code in the response Status,
// mapped in one place (codes.go).
package grpcapi
