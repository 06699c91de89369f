package broker

import (
	"strconv"
	"testing"
)

// TestBitMapLengthConsumeQueueExtDerived: the stock broker overwrites
// bitMapLengthConsumeQueueExt at start with the bit count of the bloom filter
// that maxErrorRateOfBloomFilter and expectConsumerNumUseFilter shape
// (ConsumerFilterManager's constructor), so GET_BROKER_CONFIG shows 112 with
// the defaults whatever the file says; the oracle test
// (integration/java UpdateBrokerConfigTest) saw 112 on Java 4.9.7 and 64 on
// rmq. An update still changes the reported value until the next start, as
// on Java.
func TestBitMapLengthConsumeQueueExtDerived(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Options)
		want int
	}{
		{"defaults", func(*Options) {}, 112},
		{"configured value ignored", func(o *Options) { o.BitMapLengthConsumeQueueExt = 200 }, 112},
		{"from the bloom keys", func(o *Options) { o.ExpectConsumerNumUseFilter = 64; o.MaxErrorRateOfBloomFilter = 10 }, 312},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := startBroker(t, tc.set)
			_, got, _ := tb.brokerConfig(t)
			if got["bitMapLengthConsumeQueueExt"] != strconv.Itoa(tc.want) {
				t.Errorf("bitMapLengthConsumeQueueExt = %q, want %d", got["bitMapLengthConsumeQueueExt"], tc.want)
			}
		})
	}
}
