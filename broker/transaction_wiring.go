package broker

// txOpts are the transaction settings read from Options.
type txOpts struct {
	timeoutMs  int64 // transactionTimeOut
	intervalMs int64 // transactionCheckInterval
	checkMax   int   // transactionCheckMax
}

// txOptions reads the transaction settings; zero or negative values take the
// stock defaults (6 s, 60 s, 15).
func (b *Broker) txOptions() txOpts {
	o := txOpts{timeoutMs: b.opts.TransactionTimeOut, intervalMs: b.opts.TransactionCheckInterval, checkMax: b.opts.TransactionCheckMax}
	if o.timeoutMs <= 0 {
		o.timeoutMs = 6000
	}
	if o.intervalMs <= 0 {
		o.intervalMs = 60000
	}
	if o.checkMax <= 0 {
		o.checkMax = 15
	}
	return o
}

// txService returns the broker's transaction service, nil before
// newTransactionService.
func (b *Broker) txService() *transactionService { return b.tx }

func (b *Broker) setTxService(s *transactionService) { b.tx = s }
