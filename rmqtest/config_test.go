package rmqtest

import (
	"strings"
	"testing"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/conf"
)

func TestApplyConfBindsEveryKeyExactly(t *testing.T) {
	o := broker.DefaultOptions()
	value := " a\\b:c=d #e\tf\n "
	err := applyConf(map[string]string{
		"brokerName":               value,
		"transactionCheckInterval": "10000",
		"timerWheelEnable":         "false",
	}, "test", &o)
	if err != nil {
		t.Fatal(err)
	}
	if o.BrokerName != value || o.TransactionCheckInterval != 10000 || o.TimerWheelEnable {
		t.Fatalf("bound %q %d %v", o.BrokerName, o.TransactionCheckInterval, o.TimerWheelEnable)
	}
}

func TestApplyConfRefusesUnknownKeysAndBadValues(t *testing.T) {
	o := broker.DefaultOptions()
	if err := applyConf(map[string]string{"noSuchKey": "1"}, "WithBrokerConfig", &o); err == nil || !strings.Contains(err.Error(), "noSuchKey") {
		t.Fatalf("unknown key: %v", err)
	}
	if err := applyConf(map[string]string{"defaultTopicQueueNums": "many"}, "WithBrokerConfig", &o); err == nil {
		t.Fatal("a bad value was accepted")
	}
}

// A key with separators and blanks survives the properties syntax.
func TestEscapeKey(t *testing.T) {
	var dst struct {
		V string `conf:"a b=c:d"`
		W string `conf:"#x"`
	}
	text := escape("a b=c:d", true) + "=1\n" + escape("#x", true) + "=2\n"
	if _, err := conf.Load(strings.NewReader(text), "test", &dst); err != nil || dst.V != "1" || dst.W != "2" {
		t.Fatalf("%q → %+v %v", text, dst, err)
	}
}
