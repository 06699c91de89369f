package broker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/remoting"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// TestClientLogLinesCarryAddressAndClientID: a log line about a request
// names the client's address and, after its heartbeat, its client id.
func TestClientLogLinesCarryAddressAndClientID(t *testing.T) {
	var logs syncBuffer
	tb := startBroker(t, func(o *Options) {
		o.AutoCreateTopicEnable = false
		o.Logger = zerolog.New(&logs)
	})
	hb := remoting.HeartbeatData{ClientID: "127.0.0.1@logtest", ProducerDataSet: []*remoting.ProducerData{{GroupName: "LogPG"}}}
	if resp := tb.invoke(remoting.HeartBeat, nil, remoting.MarshalBody(&hb)); resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %d %q", resp.Code, resp.Remark)
	}
	if resp := tb.send(sendArgs{topic: "NoSuchTopicForLogs", body: []byte("x")}); resp.Code == remoting.Success {
		t.Fatal("send to a missing topic succeeded")
	}
	var found bool
	for _, l := range logs.lines() {
		if !strings.Contains(l, "send to a topic that does not exist") {
			continue
		}
		found = true
		var m struct {
			Client struct {
				Addr string `json:"addr"`
				ID   string `json:"id"`
			} `json:"client"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		if !strings.HasPrefix(m.Client.Addr, "127.0.0.1:") || m.Client.ID != "127.0.0.1@logtest" {
			t.Errorf("client fields %+v in %s", m.Client, l)
		}
	}
	if !found {
		t.Fatalf("no log line about the missing topic in %q", logs.lines())
	}
}
