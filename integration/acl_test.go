package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rmqio/rmq/acl"
	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/remoting"
)

// The stock Go client's WithCredentials (ACLInterceptor) against a broker
// with aclEnable=true: right, wrong and missing credentials, per-topic and
// per-group permissions, admin-only codes, a global white address.
func TestACLWithGoClientCredentials(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	aclFile := filepath.Join(dir, "plain_acl.yml")
	group := uniqueName(t, "cg")
	yml := `accounts:
  - accessKey: goprod01
    secretKey: gosecret1
    defaultTopicPerm: DENY
    topicPerms:
      - AclGoTopic=PUB
  - accessKey: gocons01
    secretKey: gosecret2
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - AclGoTopic=SUB
    groupPerms:
      - ` + group + `=SUB
  - accessKey: goadmin1
    secretKey: goadminsec
    admin: true
`
	if err := os.WriteFile(aclFile, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	p := harness.Start(t, harness.Config{Bin: rmqBin, WorkDir: dir, BrokerConf: []string{
		"brokerClusterName=AclCluster", "mappedFileSizeCommitLog=8388608", "aclEnable=true", "aclFile=" + aclFile,
	}})
	ns := p.NamesrvAddr()
	prodCreds := primitive.Credentials{AccessKey: "goprod01", SecretKey: "gosecret1"}

	send := func(pr interface {
		SendSync(context.Context, ...*primitive.Message) (*primitive.SendResult, error)
	}, topic, id string) error {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		defer cancel()
		_, err := pr.SendSync(ctx, testMsg(topic, id, bodyFor(id)))
		return err
	}

	right, _ := newProducer(t, ns, producer.WithCredentials(prodCreds), producer.WithRetry(0))
	msgs, ids := makeMsgs("AclGoTopic", "acl", 3)
	sendAll(t, right, msgs)

	wrong, _ := newProducer(t, ns, producer.WithCredentials(primitive.Credentials{AccessKey: "goprod01", SecretKey: "not-the-secret"}), producer.WithRetry(0))
	if err := send(wrong, "AclGoTopic", "wrong"); err == nil || !strings.Contains(err.Error(), "Check signature failed for accessKey=goprod01") {
		t.Fatalf("send with a wrong secret: %v", err)
	}
	missing, _ := newProducer(t, ns, producer.WithRetry(0))
	if err := send(missing, "AclGoTopic", "missing"); err == nil || !strings.Contains(err.Error(), "No accessKey is configured") {
		t.Fatalf("send without credentials: %v", err)
	}
	if err := send(right, "AclGoOther", "other"); err == nil || !strings.Contains(err.Error(), "No default permission for topic:AclGoOther") {
		t.Fatalf("send to a topic without PUB: %v", err)
	}

	// The consumer account may SUB the topic and its group.
	col := newCollector()
	startConsumer(t, ns, consumerConf{group: group, topic: "AclGoTopic", opts: []consumer.Option{
		consumer.WithCredentials(primitive.Credentials{AccessKey: "gocons01", SecretKey: "gosecret2"}),
	}}, col)
	waitAll(t, consumeTimeout, ids, col)

	// Admin-only request codes (Permission.ADMIN_CODE).
	cli := remoting.NewClient(remoting.ClientOptions{})
	defer cli.Close()
	create := map[string]string{
		"topic": "AclGoCreated", "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4",
		"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
	}
	for _, c := range []struct {
		ak, sk string
		want   int32
	}{{"goprod01", "gosecret1", remoting.SystemError}, {"goadmin1", "goadminsec", remoting.Success}} {
		ext := map[string]string{}
		for k, v := range create {
			ext[k] = v
		}
		req := remoting.NewRequest(remoting.UpdateAndCreateTopic, ext, nil)
		acl.SignRequest(req, c.ak, c.sk, "")
		resp, err := cli.InvokeTimeout(p.BrokerAddr(), req, sendTimeout)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code != c.want {
			t.Fatalf("UPDATE_AND_CREATE_TOPIC as %s: %d %q, want %d", c.ak, resp.Code, resp.Remark, c.want)
		}
	}

	// A global white address lets the unsigned producer in.
	a := admin.New(admin.Options{NamesrvAddr: ns, AccessKey: "goadmin1", SecretKey: "goadminsec"})
	defer a.Close()
	if _, err := a.UpdateGlobalWhiteAddr(context.Background(), p.BrokerAddr(), "", "127.0.0.1", ""); err != nil {
		t.Fatalf("updateGlobalWhiteAddr: %v", err)
	}
	if err := send(missing, "AclGoOther", "white"); err != nil {
		t.Fatalf("send from a white-listed address: %v", err)
	}
}
