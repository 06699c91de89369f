package replicas

import (
	"math"
	"strings"
	"testing"
)

// brokerElectionPriority is a Java int: the heartbeat carries it as one
// (int32 here). A value outside that range used to wrap silently (1<<32
// became priority 0, the strongest claim), so it is refused.
func TestElectionPriorityMustFitAnInt(t *testing.T) {
	for _, c := range []struct {
		prio int
		ok   bool
	}{{math.MaxInt32, true}, {-5, true}, {0, true}, {math.MaxInt32 + 1, false}, {1 << 32, false}, {math.MinInt32 - 1, false}} {
		k := DefaultKeys()
		k.EnableControllerMode, k.ControllerAddr = true, "127.0.0.1:9878"
		k.BrokerElectionPriority = c.prio
		errs := k.Validate(false)
		if (len(errs) == 0) != c.ok {
			t.Fatalf("brokerElectionPriority %d: errors %v", c.prio, errs)
		}
		if len(errs) > 0 && !strings.Contains(errs[0].Error(), "brokerElectionPriority") {
			t.Fatalf("brokerElectionPriority %d: error does not name the key: %v", c.prio, errs)
		}
	}
}
