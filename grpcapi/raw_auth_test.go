package grpcapi

import (
	"strings"
	"testing"

	"github.com/rmqio/rmq/auth"
	"github.com/rmqio/rmq/broker"
	v2 "github.com/rmqio/rmq/grpcapi/apiv2"
)

// startAuthServer is a consume server with ACL 2.0 on, a super user root
// and a normal user app that may publish PubTopic and subscribe SubTopic
// with SubGroup, and is denied DenyTopic whatever else allows.
func startAuthServer(t *testing.T) *consumeServer {
	t.Helper()
	cs := startConsumeServer(t, func(o *broker.Options) {
		o.AuthenticationEnabled, o.AuthorizationEnabled = true, true
		o.AuthenticationMetadataProvider, o.AuthorizationMetadataProvider = "local", "local"
		o.InitAuthenticationUser = `{"username":"root","password":"rootpw"}`
		o.AuthorizationWhitelist = "apache.rocketmq.v2.HeartbeatRequest"
	}, nil)
	for _, topic := range []string{"PubTopic", "SubTopic", "DenyTopic"} {
		cs.createTopic(topic, 1)
	}
	md := cs.b.Auth().Metadata()
	if err := md.CreateUser(auth.User{Username: "app", Password: "apppw"}); err != nil {
		t.Fatal(err)
	}
	ai := auth.AclInfo{Policies: []auth.PolicyInfo{{Entries: []auth.EntryInfo{
		{Resource: "*", Actions: []string{"All"}, Decision: "Allow", SourceIps: []string{"10.0.0.0/8"}},
		{Resource: "Topic:PubTopic", Actions: []string{"Pub"}, Decision: "Allow"},
		{Resource: "Topic:SubTopic", Actions: []string{"Sub"}, Decision: "Allow"},
		{Resource: "Group:SubGroup", Actions: []string{"Sub"}, Decision: "Allow"},
		{Resource: "Topic:Deny*", Actions: []string{"All"}, Decision: "Deny"},
	}}}}
	if err := md.PutAclInfo("User:app", ai); err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestRawAuth2Send(t *testing.T) {
	cs := startAuthServer(t)
	c := dial(t, cs.testServer, false)
	cases := []struct {
		name, ak, sk, topic string
		want                v2.Code
		msg                 string
	}{
		{"no credentials", "", "", "PubTopic", v2.Code_UNAUTHORIZED, "username cannot be null."},
		{"wrong signature", "app", "nope", "PubTopic", v2.Code_UNAUTHORIZED, "check signature failed."},
		{"unknown user", "ghost", "x", "PubTopic", v2.Code_UNAUTHORIZED, "User:ghost is not found."},
		{"sub only", "app", "apppw", "SubTopic", v2.Code_UNAUTHORIZED, "User:app has no permission to access Topic:SubTopic from 127.0.0.1, no matched policies."},
		{"denied", "app", "apppw", "DenyTopic", v2.Code_UNAUTHORIZED, "the decision is deny."},
		{"allowed", "app", "apppw", "PubTopic", v2.Code_OK, ""},
		{"super", "root", "rootpw", "DenyTopic", v2.Code_OK, ""},
	}
	for _, k := range cases {
		resp, err := c.SendMessage(signedCtx(t, k.ak, k.sk), sendReq(k.topic, []byte("x"), "ID-"+k.name))
		if err != nil || resp.Status.Code != k.want || (k.msg != "" && !strings.Contains(resp.Status.Message, k.msg)) {
			t.Fatalf("%s: %v %v, want %v %q", k.name, resp, err, k.want, k.msg)
		}
	}
	// A route needs Pub or Sub on the topic.
	route, err := c.QueryRoute(signedCtx(t, "app", "apppw"), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "SubTopic"}})
	if err != nil || route.Status.Code != v2.Code_OK {
		t.Fatalf("route: %v %v", route, err)
	}
	route, err = c.QueryRoute(signedCtx(t, "app", "apppw"), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "Nope"}})
	if err != nil || route.Status.Code != v2.Code_UNAUTHORIZED {
		t.Fatalf("route of an unlisted topic: %v %v", route, err)
	}
	// Disabled at run time: the next call is refused.
	if err := cs.b.Auth().Metadata().UpdateUser(auth.User{Username: "app", UserStatus: auth.StatusOff}); err != nil {
		t.Fatal(err)
	}
	resp, err := c.SendMessage(signedCtx(t, "app", "apppw"), sendReq("PubTopic", []byte("x"), "ID-disabled"))
	if err != nil || resp.Status.Code != v2.Code_UNAUTHORIZED || resp.Status.Message != "User:app is disabled." {
		t.Fatalf("disabled: %v %v", resp, err)
	}
}
