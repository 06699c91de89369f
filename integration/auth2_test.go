package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/auth"
	"github.com/rmqio/rmq/integration/harness"
)

// The stock Go client's WithCredentials (the AclClientRPCHook signature)
// against a broker with ACL 2.0 (authenticationEnabled,
// authorizationEnabled): users and ACLs made over 3001/3006 by rmq admin
// signed as the init super user, then right, wrong and missing
// credentials, a topic outside the ACL, a consumer allowed Sub and Get on
// its topic and group.
func TestAuth2WithGoClientCredentials(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	group := uniqueName(t, "cg")
	p := harness.Start(t, harness.Config{Bin: rmqBin, WorkDir: dir, BrokerConf: []string{
		"brokerClusterName=Auth2Cluster", "mappedFileSizeCommitLog=8388608",
		"authenticationEnabled=true", "authorizationEnabled=true",
		"authenticationMetadataProvider=org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
		"authorizationMetadataProvider=org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider",
		`initAuthenticationUser={"username":"goroot","password":"gorootpw"}`,
	}})
	ns := p.NamesrvAddr()
	a := admin.New(admin.Options{NamesrvAddr: ns, AccessKey: "goroot", SecretKey: "gorootpw"})
	defer a.Close()
	ctx := context.Background()
	for _, u := range []string{"goapp", "gocons"} {
		if _, err := a.CreateUser(ctx, p.BrokerAddr(), "", auth.UserInfo{Username: u, Password: u + "pw"}); err != nil {
			t.Fatalf("createUser %s: %v", u, err)
		}
	}
	if _, err := a.PutAcl(ctx, p.BrokerAddr(), "", admin.AclOf("User:goapp", []string{"Topic:Auth2GoTopic"}, []string{"Pub"}, nil, "Allow"), false); err != nil {
		t.Fatalf("createAcl: %v", err)
	}
	if _, err := a.PutAcl(ctx, p.BrokerAddr(), "", admin.AclOf("User:gocons", []string{"Topic:Auth2GoTopic", "Group:" + group}, []string{"Sub", "Get"}, nil, "Allow"), false); err != nil {
		t.Fatalf("createAcl: %v", err)
	}

	send := func(pr interface {
		SendSync(context.Context, ...*primitive.Message) (*primitive.SendResult, error)
	}, topic, id string) error {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		defer cancel()
		_, err := pr.SendSync(ctx, testMsg(topic, id, bodyFor(id)))
		return err
	}
	right, _ := newProducer(t, ns, producer.WithCredentials(primitive.Credentials{AccessKey: "goapp", SecretKey: "goapppw"}), producer.WithRetry(0))
	msgs, ids := makeMsgs("Auth2GoTopic", "auth2", 3)
	sendAll(t, right, msgs)

	wrong, _ := newProducer(t, ns, producer.WithCredentials(primitive.Credentials{AccessKey: "goapp", SecretKey: "not-the-secret"}), producer.WithRetry(0))
	if err := send(wrong, "Auth2GoTopic", "wrong"); err == nil || !strings.Contains(err.Error(), "check signature failed.") {
		t.Fatalf("send with a wrong secret: %v", err)
	}
	missing, _ := newProducer(t, ns, producer.WithRetry(0))
	if err := send(missing, "Auth2GoTopic", "missing"); err == nil || !strings.Contains(err.Error(), "username cannot be null.") {
		t.Fatalf("send without credentials: %v", err)
	}
	if err := send(right, "Auth2GoOther", "other"); err == nil || !strings.Contains(err.Error(), "User:goapp has no permission to access Topic:Auth2GoOther") {
		t.Fatalf("send outside the ACL: %v", err)
	}

	col := newCollector()
	startConsumer(t, ns, consumerConf{group: group, topic: "Auth2GoTopic", opts: []consumer.Option{
		consumer.WithCredentials(primitive.Credentials{AccessKey: "gocons", SecretKey: "goconspw"}),
	}}, col)
	waitAll(t, consumeTimeout, ids, col)
}
