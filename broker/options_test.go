package broker

import (
	"strings"
	"testing"

	"github.com/rmqio/rmq/conf"
)

// TestTransactionOptionDefaults: options left unset (zero) take the stock
// BrokerConfig values, explicitly negative ones are refused.
func TestTransactionOptionDefaults(t *testing.T) {
	d := DefaultOptions()
	if d.TransactionTimeOut != 6000 || d.TransactionCheckInterval != 60000 || d.TransactionCheckMax != 15 {
		t.Fatalf("DefaultOptions: timeout %d, interval %d, max %d; want 6000, 60000, 15",
			d.TransactionTimeOut, d.TransactionCheckInterval, d.TransactionCheckMax)
	}
	cases := []struct {
		name              string
		timeout, interval int64
		max               int
		wantErr           bool
		want              [3]int64 // timeout, interval, max after Validate
	}{
		{name: "zero takes the defaults", want: [3]int64{6000, 60000, 15}},
		{name: "set values are kept", timeout: 1000, interval: 10000, max: 3, want: [3]int64{1000, 10000, 3}},
		{name: "each falls back alone", timeout: 2500, max: 0, interval: 7000, want: [3]int64{2500, 7000, 15}},
		{name: "negative timeout refused", timeout: -1, wantErr: true},
		{name: "negative interval refused", interval: -5, wantErr: true},
		{name: "negative max refused", max: -2, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := DefaultOptions()
			o.TransactionTimeOut, o.TransactionCheckInterval, o.TransactionCheckMax = c.timeout, c.interval, c.max
			err := o.Validate()
			if c.wantErr {
				if err == nil || !strings.Contains(err.Error(), "transaction") {
					t.Fatalf("Validate = %v, want a transaction option error", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := [3]int64{o.TransactionTimeOut, o.TransactionCheckInterval, int64(o.TransactionCheckMax)}; got != c.want {
				t.Fatalf("after Validate: %v, want %v", got, c.want)
			}
		})
	}
}

// TestTransactionOptionsUnsetStart: a broker whose transaction options were
// never set starts with the stock check settings.
func TestTransactionOptionsUnsetStart(t *testing.T) {
	tb := startBroker(t, func(o *Options) {
		o.TransactionTimeOut, o.TransactionCheckInterval, o.TransactionCheckMax = 0, 0, 0
	})
	if o := tb.Broker.opts; o.TransactionTimeOut != 6000 || o.TransactionCheckInterval != 60000 || o.TransactionCheckMax != 15 {
		t.Fatalf("options %d %d %d, want 6000 60000 15", o.TransactionTimeOut, o.TransactionCheckInterval, o.TransactionCheckMax)
	}
}

// TestDeliverCoalesceOption: deliverCoalesceMs defaults to 5, loads from a
// config file and is refused outside 0..1000 (TestDeliverCoalesceDefault
// shows it pacing levels and timers).
func TestDeliverCoalesceOption(t *testing.T) {
	if d := DefaultOptions(); d.DeliverCoalesceMs != 5 {
		t.Fatalf("default deliverCoalesceMs %d, want 5", d.DeliverCoalesceMs)
	}
	o := DefaultOptions()
	if _, err := conf.Load(strings.NewReader("deliverCoalesceMs=0\n"), "broker.conf", &o); err != nil || o.DeliverCoalesceMs != 0 {
		t.Fatalf("deliverCoalesceMs=0 loaded as %d (%v)", o.DeliverCoalesceMs, err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("Validate with 0: %v", err)
	}
	for _, bad := range []int64{-1, 1001} {
		o := DefaultOptions()
		o.DeliverCoalesceMs = bad
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "deliverCoalesceMs") {
			t.Fatalf("Validate with %d = %v, want a deliverCoalesceMs error", bad, err)
		}
	}
}
