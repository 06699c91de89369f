//go:build !race

package grpcsdk

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	rmqclient "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
)

// newProducer starts a stock Go 5.x SDK producer (TLS on, its default)
// against ts.
func newProducer(t *testing.T, ts *testServer, topic string, opts ...rmqclient.ProducerOption) rmqclient.Producer {
	t.Helper()
	opts = append(opts, rmqclient.WithTopics(topic))
	p, err := rmqclient.NewProducer(&rmqclient.Config{Endpoint: ts.endpoint(), Credentials: &credentials.SessionCredentials{}}, opts...)
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("producer Start: %v", err)
	}
	t.Cleanup(func() { _ = p.GracefulStop() })
	return p
}

func TestSDKProducerNormal(t *testing.T) {
	ts := startServer(t, hostConf{})
	ts.createTopic("NormalTopic", 4)
	p := newProducer(t, ts, "NormalTopic")
	for i := range 5 {
		msg := &rmqclient.Message{Topic: "NormalTopic", Body: []byte{byte('a' + i)}}
		msg.SetTag("tagA")
		msg.SetKeys("k1", "k2")
		receipts, err := p.Send(context.Background(), msg)
		if err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
		if len(receipts) != 1 || receipts[0].MessageID == "" {
			t.Fatalf("receipts %+v", receipts)
		}
	}
	ts.waitCount(t, "NormalTopic", 4, 5)
}

func TestSDKProducerFIFO(t *testing.T) {
	ts := startServer(t, hostConf{})
	ts.createTopic("FifoTopic", 8)
	p := newProducer(t, ts, "FifoTopic")
	for i := range 4 {
		msg := &rmqclient.Message{Topic: "FifoTopic", Body: []byte{byte(i)}}
		msg.SetMessageGroup("orderGroup1")
		if _, err := p.Send(context.Background(), msg); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	ts.waitCount(t, "FifoTopic", 8, 4)
	want := ts.fifoQueue("orderGroup1", 8)
	counts := ts.queueCounts("FifoTopic", 8)
	for q, n := range counts {
		if (q == want) != (n == 4) || (q != want && n != 0) {
			t.Fatalf("queue counts %v, want all 4 in queue %d", counts, want)
		}
	}
}

func TestSDKProducerDelay(t *testing.T) {
	ts := startServer(t, hostConf{})
	ts.createTopic("DelayTopic", 2)
	p := newProducer(t, ts, "DelayTopic")
	msg := &rmqclient.Message{Topic: "DelayTopic", Body: []byte("later")}
	msg.SetDelayTimestamp(time.Now().Add(time.Hour))
	if _, err := p.Send(context.Background(), msg); err != nil {
		t.Fatalf("Send: %v", err)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return ts.maxOffset(message.TopicWheelTimer, 0) == 1 },
		"the message on the timer topic")
	if got := ts.total("DelayTopic", 2); got != 0 {
		t.Fatalf("a message due in an hour is on its topic already (%d)", got)
	}
	// Too far ahead: ILLEGAL_DELIVERY_TIME, refused by the SDK as a bad request.
	far := &rmqclient.Message{Topic: "DelayTopic", Body: []byte("too late")}
	far.SetDelayTimestamp(time.Now().Add(48 * time.Hour))
	if _, err := p.Send(context.Background(), far); err == nil {
		t.Fatal("a delivery timestamp two days ahead was accepted")
	}
}

func TestSDKTransactionCommitRollback(t *testing.T) {
	ts := startServer(t, hostConf{}) // the default check interval (60 s) sends no check during the test
	ts.createTopic("TxTopic", 2)
	unknown := &rmqclient.TransactionChecker{Check: func(*rmqclient.MessageView) rmqclient.TransactionResolution { return rmqclient.UNKNOWN }}
	p := newProducer(t, ts, "TxTopic", rmqclient.WithTransactionChecker(unknown))

	tx := p.BeginTransaction()
	if _, err := p.SendWithTransaction(context.Background(), &rmqclient.Message{Topic: "TxTopic", Body: []byte("commit me")}, tx); err != nil {
		t.Fatalf("SendWithTransaction: %v", err)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return ts.maxOffset(message.TopicTransHalf, 0) == 1 },
		"the half message")
	if got := ts.total("TxTopic", 2); got != 0 {
		t.Fatalf("half message visible before commit (%d)", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	ts.waitCount(t, "TxTopic", 2, 1)

	tx = p.BeginTransaction()
	if _, err := p.SendWithTransaction(context.Background(), &rmqclient.Message{Topic: "TxTopic", Body: []byte("roll me back")}, tx); err != nil {
		t.Fatalf("SendWithTransaction: %v", err)
	}
	if err := tx.RollBack(); err != nil {
		t.Fatalf("RollBack: %v", err)
	}
	// The rollback stored its op record; the real topic got nothing.
	testutil.WaitFor(t, 10*time.Second, func() bool { return ts.maxOffset(message.TopicTransOpHalf, 0) == 2 },
		"the op records of both decisions")
	if got := ts.total("TxTopic", 2); got != 1 {
		t.Fatalf("after rollback %d messages, want still 1", got)
	}
}

func TestSDKTransactionCheckBack(t *testing.T) {
	// Half messages checked every 50 ms after 1 s, with a check budget
	// large enough that the checker's COMMIT arrives first (sdkhost).
	ts := startServer(t, hostConf{fastTxCheck: true})
	ts.createTopic("TxCheckTopic", 2)
	checked := make(chan string, 4)
	commit := &rmqclient.TransactionChecker{Check: func(mv *rmqclient.MessageView) rmqclient.TransactionResolution {
		checked <- string(mv.GetBody())
		return rmqclient.COMMIT
	}}
	p := newProducer(t, ts, "TxCheckTopic", rmqclient.WithTransactionChecker(commit))
	tx := p.BeginTransaction()
	if _, err := p.SendWithTransaction(context.Background(), &rmqclient.Message{Topic: "TxCheckTopic", Body: []byte("orphan")}, tx); err != nil {
		t.Fatalf("SendWithTransaction: %v", err)
	}
	// No Commit: the broker's check reaches the checker over Telemetry, and
	// its COMMIT comes back as EndTransaction.
	select {
	case body := <-checked:
		if body != "orphan" {
			t.Fatalf("checked message body %q", body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no RecoverOrphanedTransactionCommand reached the checker")
	}
	ts.waitCount(t, "TxCheckTopic", 2, 1)
}

// With aclEnable the stock SDK's signature (its SessionCredentials) is
// checked: the account's producer sends to the topic it may publish; one
// with a wrong secret is refused.
func TestSDKProducerACL(t *testing.T) {
	aclFile := filepath.Join(t.TempDir(), "plain_acl.yml")
	rules := "accounts:\n  - accessKey: sdkUser1\n    secretKey: sdkSecret1\n    defaultTopicPerm: DENY\n    defaultGroupPerm: DENY\n    topicPerms:\n      - AclTopic=PUB\n"
	if err := os.WriteFile(aclFile, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, hostConf{aclFile: aclFile})
	ts.createTopic("AclTopic", 1)
	start := func(secret string) (rmqclient.Producer, error) {
		p, err := rmqclient.NewProducer(&rmqclient.Config{Endpoint: ts.endpoint(),
			Credentials: &credentials.SessionCredentials{AccessKey: "sdkUser1", AccessSecret: secret}}, rmqclient.WithTopics("AclTopic"))
		if err != nil {
			return nil, err
		}
		if err := p.Start(); err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = p.GracefulStop() })
		return p, nil
	}
	p, err := start("sdkSecret1")
	if err != nil {
		t.Fatalf("producer with the account's secret: %v", err)
	}
	if _, err := p.Send(context.Background(), &rmqclient.Message{Topic: "AclTopic", Body: []byte("x")}); err != nil {
		t.Fatalf("signed send: %v", err)
	}
	ts.waitCount(t, "AclTopic", 1, 1)
	if bad, err := start("wrongSecret1"); err == nil {
		if _, err := bad.Send(context.Background(), &rmqclient.Message{Topic: "AclTopic", Body: []byte("y")}); err == nil {
			t.Fatal("a producer with a wrong secret sent")
		}
	}
}

// With ACL 2.0 the stock SDK's signature is checked against the users of
// auth.json (5.3.3 DefaultAuthenticationHandler) and its sends against the
// user's ACL: app may publish Auth2Topic only; a wrong secret and a topic
// outside the ACL are refused.
func TestSDKProducerAuth2(t *testing.T) {
	ts := startServer(t, hostConf{authJSON: `{
  "users": [{"username": "app", "password": "appSecret1", "userType": "Normal", "userStatus": "enable"}],
  "acls": [{"subject": "User:app", "policies": [{"policyType": "Custom", "entries": [
    {"resource": "Topic:Auth2Topic", "actions": ["Pub"], "decision": "Allow"}]}]}]
}`})
	ts.createTopic("Auth2Topic", 1)
	ts.createTopic("Auth2Other", 1)
	start := func(secret, topic string) (rmqclient.Producer, error) {
		p, err := rmqclient.NewProducer(&rmqclient.Config{Endpoint: ts.endpoint(),
			Credentials: &credentials.SessionCredentials{AccessKey: "app", AccessSecret: secret}}, rmqclient.WithTopics(topic))
		if err != nil {
			return nil, err
		}
		if err := p.Start(); err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = p.GracefulStop() })
		return p, nil
	}
	p, err := start("appSecret1", "Auth2Topic")
	if err != nil {
		t.Fatalf("producer with the user's password: %v", err)
	}
	if _, err := p.Send(context.Background(), &rmqclient.Message{Topic: "Auth2Topic", Body: []byte("x")}); err != nil {
		t.Fatalf("signed send: %v", err)
	}
	ts.waitCount(t, "Auth2Topic", 1, 1)
	if _, err := p.Send(context.Background(), &rmqclient.Message{Topic: "Auth2Other", Body: []byte("y")}); err == nil {
		t.Fatal("a send outside the ACL succeeded")
	}
	if bad, err := start("wrongSecret1", "Auth2Topic"); err == nil {
		if _, err := bad.Send(context.Background(), &rmqclient.Message{Topic: "Auth2Topic", Body: []byte("z")}); err == nil {
			t.Fatal("a producer with a wrong secret sent")
		}
	}
	if n := ts.queueCounts("Auth2Other", 1)[0]; n != 0 {
		t.Fatalf("%d refused messages stored", n)
	}
}
