package auth

import (
	"encoding/json"
	"strings"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
)

// annotation is a request header's @RocketMQAction and its
// @RocketMQResource fields (actions_gen.go).
type annotation struct {
	header  string
	cluster bool // resource = CLUSTER: the broker's cluster unless a field names one
	actions []string
	fields  []resourceField
}

// rmqCodes are rmq's own codes (remoting/codes_rmq.go), which no stock
// header annotates: fast-forwarding the broker's message clock changes
// the whole broker, so it needs Update on the cluster, as the 5.3.3 admin
// codes that change the broker do.
var rmqCodes = map[int32]annotation{
	remoting.ClockFastForward: {header: "rmq CLOCK_FAST_FORWARD", cluster: true, actions: []string{ActUpdate}},
}

// resourceField is a header field naming resources of typ; a splitter
// splits its value into several (StringUtils.split: on any of its
// characters, empty pieces dropped).
type resourceField struct {
	typ, name, splitter string
}

// The ext field names the explicit cases read.
const (
	extTopic         = "topic"
	extGroup         = "group"
	extConsumerGroup = "consumerGroup"
	extV2Group       = "a"
	extV2Topic       = "b"
)

// Requests is DefaultAuthorizationContextBuilder.build for a remoting
// request: the resources and actions it needs, by the explicit cases of
// its switch, else by the request header's annotation. cluster is the
// broker's cluster (brokerClusterName), sourceIP the peer's address. A
// request with no ext fields, or whose code no annotated header carries,
// needs nothing; a body that does not parse is refused.
func Requests(req *remoting.Command, cluster, sourceIP string) ([]Request, error) {
	ext := req.Ext()
	if len(ext) == 0 {
		return nil, nil
	}
	var out []Request
	add := func(r Resource, acts ...string) {
		out = append(out, Request{Resource: r, Actions: acts, SourceIP: sourceIP})
	}
	switch req.Code {
	case remoting.GetRouteinfoByTopic:
		if t := ext[extTopic]; isRetryTopic(t) {
			add(Group(t), ActSub, ActGet)
		} else {
			add(Topic(t), ActPub, ActSub, ActGet)
		}
	case remoting.SendMessage:
		sendContext(add, ext[extTopic], ext[extGroup])
	case remoting.SendMessageV2, remoting.SendBatchMessage:
		sendContext(add, ext[extV2Topic], ext[extV2Group])
	case remoting.RecallMessage:
		add(Topic(ext[extTopic]), ActPub)
	case remoting.EndTransaction:
		if t := ext[extTopic]; strings.TrimSpace(t) != "" {
			add(Topic(t), ActPub)
		}
	case remoting.ConsumerSendMsgBack:
		add(Group(ext[extGroup]), ActSub)
	case remoting.PullMessage:
		if t := ext[extTopic]; !isRetryTopic(t) {
			add(Topic(t), ActSub)
		}
		add(Group(ext[extConsumerGroup]), ActSub)
	case remoting.QueryMessage:
		add(Topic(ext[extTopic]), ActSub, ActGet)
	case remoting.HeartBeat:
		var hb struct {
			ConsumerDataSet []struct {
				GroupName           string `json:"groupName"`
				SubscriptionDataSet []struct {
					Topic string `json:"topic"`
				} `json:"subscriptionDataSet"`
			} `json:"consumerDataSet"`
		}
		if err := decodeBody(req.Body, &hb); err != nil {
			return nil, err
		}
		for _, cd := range hb.ConsumerDataSet {
			add(Group(cd.GroupName), ActSub)
			for _, sd := range cd.SubscriptionDataSet {
				if !isRetryTopic(sd.Topic) {
					add(Topic(sd.Topic), ActSub)
				}
			}
		}
	case remoting.UnregisterClient:
		if g := ext[extConsumerGroup]; strings.TrimSpace(g) != "" {
			add(Group(g), ActSub)
		}
	case remoting.GetConsumerListByGroup:
		add(Group(ext[extConsumerGroup]), ActSub, ActGet)
	case remoting.QueryConsumerOffset, remoting.UpdateConsumerOffset:
		act := ActGet
		if req.Code == remoting.UpdateConsumerOffset {
			act = ActUpdate
		}
		if t := ext[extTopic]; !isRetryTopic(t) {
			add(Topic(t), ActSub, act)
		}
		add(Group(ext[extConsumerGroup]), ActSub, act)
	case remoting.LockBatchMQ, remoting.UnlockBatchMQ:
		var body struct {
			ConsumerGroup string `json:"consumerGroup"`
			MqSet         []struct {
				Topic string `json:"topic"`
			} `json:"mqSet"`
		}
		if err := decodeBody(req.Body, &body); err != nil {
			return nil, err
		}
		add(Group(body.ConsumerGroup), ActSub)
		for _, mq := range body.MqSet {
			if !isRetryTopic(mq.Topic) {
				add(Topic(mq.Topic), ActSub)
			}
		}
	default:
		return byAnnotation(req.Code, ext, cluster, sourceIP), nil
	}
	return out, nil
}

// sendContext is SEND_MESSAGE's case: a send to a retry topic is a
// consumer's, needing Sub on its group (the producer group field, else the
// retry topic's group); any other needs Pub on the topic.
func sendContext(add func(Resource, ...string), topic, group string) {
	if !isRetryTopic(topic) {
		add(Topic(topic), ActPub)
		return
	}
	if strings.TrimSpace(group) != "" {
		add(Group(group), ActSub)
	} else {
		add(Group(topic), ActSub)
	}
}

// maxBody bounds a body decoded for authorization (heartbeats and lock
// requests are small; remoting bounds frames anyway).
const maxBody = 16 << 20

// decodeBody reads a fastjson body; failing, the request is refused as
// the stock refuses a context it cannot build.
func decodeBody(body []byte, v any) error {
	if len(body) > maxBody {
		return &Denied{Msg: "parse authorization context error."}
	}
	if err := fastjson.Unmarshal(body, v); err != nil {
		if err2 := json.Unmarshal(body, v); err2 != nil {
			return &Denied{Msg: "parse authorization context error."}
		}
	}
	return nil
}

// byAnnotation is buildContextByAnnotation: one request per resource a
// field names (a retry topic counting as its group); none named and the
// annotation's resource the cluster, the broker's cluster.
func byAnnotation(code int32, ext map[string]string, cluster, sourceIP string) []Request {
	a, ok := annotated[code]
	if !ok {
		a, ok = rmqCodes[code]
	}
	if !ok {
		return nil
	}
	var out []Request
	for _, f := range a.fields {
		v, ok := ext[f.name]
		if !ok {
			continue
		}
		vals := []string{v}
		if f.splitter != "" {
			vals = strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune(f.splitter, r) })
		}
		for _, s := range vals {
			r := Resource{Type: f.typ, Name: s, Pattern: PatternLiteral}
			if f.typ == TypeTopic && isRetryTopic(s) {
				r = Group(s)
			}
			out = append(out, Request{Resource: r, Actions: a.actions, SourceIP: sourceIP})
		}
	}
	if len(out) == 0 && a.cluster {
		out = append(out, Request{Resource: Cluster(cluster), Actions: a.actions, SourceIP: sourceIP})
	}
	return out
}
