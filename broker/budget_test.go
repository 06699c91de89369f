package broker

import "testing"

// The remoting server charges the broker's one in-flight budget, the one
// the gRPC endpoint is given (InflightBudget), sized by serverMaxInflightBytes.
func TestInflightBudgetShared(t *testing.T) {
	b := startBroker(t, func(o *Options) { o.ServerMaxInflightBytes = 48 << 20 })
	if b.server.Budget() != b.InflightBudget() {
		t.Fatal("the remoting server has a budget of its own")
	}
	if got := b.InflightBudget().Max(); got != 48<<20 {
		t.Fatalf("budget %d, want serverMaxInflightBytes", got)
	}
}
