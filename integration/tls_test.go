package integration

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// The stock Go client's TLS option (producer.WithTls, consumer.WithTls: it
// trusts any server certificate) against rmq standalone in enforcing mode:
// the name server and the broker speak TLS only, with the self-signed
// certificate made at start, and the broker registers with its name server
// over TLS. A plaintext producer gets nowhere.
//
// The Go client's WithTls sets a field of a package-level default shared by
// every client of the process (remote.DefaultRemotingClientConfig), so the
// TLS clients stop before the plaintext one is made with WithTls(false),
// which also puts the default back for the tests that follow.
func TestTLSEnforcingWithTheGoClient(t *testing.T) {
	p := ownRMQ(t, "tls.server.mode=enforcing")
	topic := uniqueName(t, "t")
	prod, stopProd := newProducer(t, p.NamesrvAddr(), producer.WithTls(true))
	msgs, ids := makeMsgs(topic, "tls", 10)
	sendAll(t, prod, msgs)
	col := newCollector()
	stopCons := startConsumer(t, p.NamesrvAddr(), consumerConf{group: uniqueName(t, "cg"), topic: topic,
		opts: []consumer.Option{consumer.WithTls(true)}}, col)
	waitAll(t, consumeTimeout, ids, col)
	for i, id := range ids {
		checkSameMessage(t, msgs[i], col.first(id))
	}

	stopCons()
	stopProd()
	plain, _ := newProducer(t, p.NamesrvAddr(), producer.WithTls(false), producer.WithSendMsgTimeout(2*time.Second), producer.WithRetry(0))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := plain.SendSync(ctx, testMsg(topic, "plain", bodyFor("plain"))); err == nil {
		t.Fatalf("a plaintext send to an enforcing rmq succeeded: %v", r)
	}
}
