package pop_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqio/rmq/remoting"
)

type assignment struct {
	MessageQueueAssignments []struct {
		MessageQueue struct {
			Topic      string `json:"topic"`
			BrokerName string `json:"brokerName"`
			QueueID    int32  `json:"queueId"`
		} `json:"messageQueue"`
		Mode string `json:"mode"`
	} `json:"messageQueueAssignments"`
}

func (e *env) queryAssignment(topic, clientID string) assignment {
	e.t.Helper()
	body := `{"topic":"` + topic + `","consumerGroup":"` + group + `","clientId":"` + clientID +
		`","strategyName":"AVG","messageModel":"CLUSTERING"}`
	resp := e.Invoke(remoting.QueryAssignment, nil, []byte(body))
	if resp.Code != remoting.Success {
		e.t.Fatalf("query assignment: %d %s", resp.Code, resp.Remark)
	}
	var a assignment
	if err := json.Unmarshal(resp.Body, &a); err != nil {
		e.t.Fatal(err)
	}
	return a
}

// TestRequestModeAndAssignment: PULL by default (the queues shared out),
// POP after SET_MESSAGE_REQUEST_MODE (queue -1 for every client), kept in
// config/messageRequestMode.json across a restart; retry topics refused.
func TestRequestModeAndAssignment(t *testing.T) {
	e := startEnv(t, nil)
	e.createTopic("T", 4)
	a := e.queryAssignment("T", "c1")
	if len(a.MessageQueueAssignments) != 4 || a.MessageQueueAssignments[0].Mode != "PULL" {
		t.Fatalf("default assignment: %+v", a)
	}
	set := func(body string) *remoting.Command {
		return e.Invoke(remoting.SetMessageRequestMode, nil, []byte(body))
	}
	if resp := set(`{"topic":"%RETRY%` + group + `","consumerGroup":"` + group + `","mode":"POP","popShareQueueNum":0}`); resp.Code != remoting.NoPermission {
		t.Fatalf("retry topic mode: %d %s", resp.Code, resp.Remark)
	}
	if resp := set(`{"topic":"T","consumerGroup":"` + group + `","mode":"POP","popShareQueueNum":8}`); resp.Code != remoting.Success {
		t.Fatalf("set mode: %d %s", resp.Code, resp.Remark)
	}
	e.restart()
	raw, err := os.ReadFile(filepath.Join(e.Opts.StorePathRootDir, "config", "messageRequestMode.json"))
	if err != nil || !strings.Contains(string(raw), `"messageRequestModeMap"`) {
		t.Fatalf("messageRequestMode.json: %s %v", raw, err)
	}
	a = e.queryAssignment("T", "c1")
	if len(a.MessageQueueAssignments) != 1 || a.MessageQueueAssignments[0].MessageQueue.QueueID != -1 ||
		a.MessageQueueAssignments[0].Mode != "POP" || a.MessageQueueAssignments[0].MessageQueue.BrokerName != e.Opts.BrokerName {
		t.Fatalf("POP assignment: %+v", a)
	}
	if resp := e.Invoke(remoting.QueryAssignment, nil, []byte(`{"topic":"Nope","consumerGroup":"g","clientId":"c"}`)); resp.Code != remoting.Success || string(resp.Body) != "{}" {
		t.Fatalf("unknown topic: %d %s", resp.Code, resp.Body)
	}

	// GET_ALL_MESSAGE_REQUEST_MODE: the table as the file holds it.
	resp := e.Invoke(remoting.GetAllMessageRequestMode, nil, nil)
	want := `{"messageRequestModeMap":{"T":{"` + group + `":{"topic":"T","consumerGroup":"` + group + `","mode":"POP","popShareQueueNum":8}}}}`
	if resp.Code != remoting.Success || string(resp.Body) != want {
		t.Fatalf("GET_ALL_MESSAGE_REQUEST_MODE: %d %s, want %s", resp.Code, resp.Body, want)
	}
}
