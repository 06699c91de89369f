package admin

import (
	"context"

	"github.com/rmqio/rmq/remoting"
)

// DeleteExpiredCommitLog sends DELETE_EXPIRED_COMMITLOG to the broker at
// addr, or to every master of cluster (every cluster when both are ""), as
// mqadmin deleteExpiredCommitLog: each broker's next 20 cleanup rounds run
// whatever its deleteWhen says. It returns the brokers that accepted.
func (a *Admin) DeleteExpiredCommitLog(ctx context.Context, addr, cluster string) ([]string, error) {
	return a.eachMaster(ctx, addr, cluster, remoting.DeleteExpiredCommitLog)
}

// CleanExpiredCQ sends CLEAN_EXPIRED_CONSUMEQUEUE as mqadmin cleanExpiredCQ:
// consume queues wholly below the commitlog minimum are destroyed.
func (a *Admin) CleanExpiredCQ(ctx context.Context, addr, cluster string) ([]string, error) {
	return a.eachMaster(ctx, addr, cluster, remoting.CleanExpiredConsumeQueue)
}

// eachMaster sends an empty request with code to addr, or to every master
// of cluster ("" = all clusters), and lists the brokers that answered
// SUCCESS; it stops at the first failure.
func (a *Admin) eachMaster(ctx context.Context, addr, cluster string, code int32) ([]string, error) {
	targets := []string{addr}
	if addr == "" {
		ms, err := a.Members(ctx, cluster)
		if err != nil {
			return nil, err
		}
		targets = targets[:0]
		for _, m := range ms {
			if m.BrokerID == 0 {
				targets = append(targets, m.Addr)
			}
		}
	}
	var done []string
	for _, t := range targets {
		if _, err := a.callBroker(ctx, t, newRequest(code, nil, nil)); err != nil {
			return done, err
		}
		done = append(done, t)
	}
	return done, nil
}
