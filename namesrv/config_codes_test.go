package namesrv

import (
	"strings"
	"testing"

	"github.com/rmqio/rmq/remoting"
)

func newUnstartedServer(t *testing.T) *Server {
	t.Helper()
	o := DefaultOptions()
	o.ListenHost = "127.0.0.1"
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNamesrvConfigRequests(t *testing.T) {
	s := newUnstartedServer(t)
	get := func() string {
		resp := s.ServeRemoting(nil, remoting.NewRequest(remoting.GetNamesrvConfig, nil, nil))
		if resp.Code != remoting.Success {
			t.Fatalf("get: %d %q", resp.Code, resp.Remark)
		}
		return string(resp.Body)
	}
	update := func(body string) *remoting.Command {
		return s.ServeRemoting(nil, remoting.NewRequest(remoting.UpdateNamesrvConfig, nil, []byte(body)))
	}
	if cfg := get(); !strings.Contains(cfg, "orderMessageEnable=false\n") || !strings.Contains(cfg, "listenPort=9876\n") {
		t.Fatalf("config:\n%s", cfg)
	}
	// A black-listed key refuses the whole update.
	for _, key := range []string{"kvConfigPath", "configStorePath", "configBlackList", "rocketmqHome"} {
		resp := update("orderMessageEnable=true\n" + key + "=/tmp/x\n")
		if resp.Code != remoting.NoPermission || resp.Remark != "Can not update config in black list." {
			t.Fatalf("%s: %d %q", key, resp.Code, resp.Remark)
		}
	}
	if !strings.Contains(get(), "orderMessageEnable=false\n") {
		t.Fatal("a refused update changed the config")
	}
	// Unknown keys are ignored; known ones change what is served.
	if resp := update("orderMessageEnable=true\nnoSuchKey=1\n"); resp.Code != remoting.Success {
		t.Fatalf("update: %d %q", resp.Code, resp.Remark)
	}
	if !strings.Contains(get(), "orderMessageEnable=true\n") || !s.config().OrderMessageEnable {
		t.Fatalf("config after the update:\n%s", get())
	}
	if resp := update("listenPort=abc\n"); resp.Code != remoting.SystemError {
		t.Fatalf("bad value: %d %q", resp.Code, resp.Remark)
	}
}

func TestUnitTopicLists(t *testing.T) {
	s := newUnstartedServer(t)
	unit, sub, both := tc("Unit", 1, 6), tc("Sub", 1, 6), tc("Both", 1, 6)
	unit.TopicSysFlag, sub.TopicSysFlag, both.TopicSysFlag = topicSysFlagUnit, topicSysFlagUnitSub, topicSysFlagUnit|topicSysFlagUnitSub
	s.routes.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerAddr: "a:1", BrokerName: "a",
		Topics: topics(1, unit, sub, both, tc("Plain", 1, 6))})
	for code, want := range map[int32]string{
		remoting.GetUnitTopicList:             "Both,Unit",
		remoting.GetHasUnitSubTopicList:       "Both,Sub",
		remoting.GetHasUnitSubUnunitTopicList: "Sub",
	} {
		resp := s.ServeRemoting(nil, remoting.NewRequest(code, nil, nil))
		var list remoting.TopicList
		if err := remoting.UnmarshalBody(resp.Body, &list); err != nil || resp.Code != remoting.Success {
			t.Fatalf("code %d: %d %v", code, resp.Code, err)
		}
		if got := strings.Join(list.TopicList, ","); got != want {
			t.Errorf("code %d lists %s, want %s", code, got, want)
		}
	}
}
