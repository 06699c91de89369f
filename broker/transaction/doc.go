// Package transaction serves transactional messages: half messages on
// RMQ_SYS_TRANS_HALF_TOPIC, their commit or rollback by END_TRANSACTION, the
// check-back of undecided ones (CHECK_TRANSACTION_STATE to a producer of the
// group), discarding after transactionCheckMax checks and
// RESUME_CHECK_HALF_MESSAGE. The design, the on-disk queues and the
// deviations from 4.9.8 are described at the top of transaction.go.
//
//	transaction.go  Service, the check loop, Hook (TRAN_MSG send → half message), IDFor
//	state.go        the decided set and chain copies, rebuilt from the op queue at New
//	check.go        one check pass: walk, put back, send the check, discard, release
//	end.go          END_TRANSACTION and RESUME_CHECK_HALF_MESSAGE
//	takeover.go     SetActive (hold/resume), the acting master's escape of half messages
//	options.go      Options, the stock defaults, the interfaces it needs
//
// # Request codes (Service.Processors)
//
//	END_TRANSACTION (37), RESUME_CHECK_HALF_MESSAGE (323)
//
// It sends CHECK_TRANSACTION_STATE (39) oneway to producers.
//
// # Imports
//
// transaction imports store, remoting and internal/clock. It never imports
// package broker or its other subpackages: the broker hands it the store and
// a Put function that runs the put hooks, and satisfies Topics with its topic
// table and Offsets and Producers with the managers of package clients.
package transaction
