package rmqtest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/rmqio/rmq/remoting"
)

// Messages reads back what Send stored, field by field, queue by queue.
func TestSendAndMessages(t *testing.T) {
	t.Parallel()
	srv := Start(t)
	const topic = "Inspect"
	srv.CreateTopic(topic, 2)
	sent, err := srv.Send(Message{Topic: topic, QueueID: 1, Body: []byte("b1"), Tags: "TagA", Keys: []string{"k1", "k2"},
		Properties: map[string]string{"color": "red"}})
	if err != nil {
		t.Fatal(err)
	}
	if sent.QueueID != 1 || sent.QueueOffset != 0 || sent.MsgID == "" {
		t.Fatalf("Send answered %+v", sent)
	}
	if _, err := srv.Send(Message{Topic: topic, Body: []byte("b0")}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Send(Message{Topic: topic, QueueID: 1, Body: []byte("b2")}); err != nil {
		t.Fatal(err)
	}
	msgs, err := srv.Messages(topic)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, string(m.Body))
	}
	if !reflect.DeepEqual(got, []string{"b0", "b1", "b2"}) {
		t.Fatalf("bodies %q, want queue 0 then queue 1 in offset order", got)
	}
	m := msgs[1]
	if m.Topic != topic || m.QueueID != 1 || m.QueueOffset != 0 || m.Tags != "TagA" ||
		!reflect.DeepEqual(m.Keys, []string{"k1", "k2"}) || m.Properties["color"] != "red" ||
		m.Properties["TAGS"] != "TagA" || m.MsgID != sent.MsgID {
		t.Fatalf("read back %+v, sent %+v", m, sent)
	}
	if d := m.StoreTime.Sub(srv.Now()); d > time.Second || d < -time.Minute {
		t.Fatalf("store time %v, virtual now %v", m.StoreTime, srv.Now())
	}
	if msgs[2].QueueOffset != 1 || len(msgs[0].Keys) != 0 {
		t.Fatalf("second message of queue 1 at %d; keys of the first of queue 0 %q", msgs[2].QueueOffset, msgs[0].Keys)
	}
	if none, err := srv.Messages("NoSuchTopic"); err != nil || len(none) != 0 {
		t.Fatalf("Messages of a missing topic: %v %v", none, err)
	}
}

// A send the broker refuses comes back as its *remoting.Refusal.
func TestSendRefused(t *testing.T) {
	t.Parallel()
	srv := Start(t)
	_, err := srv.Send(Message{Topic: "NotCreated", Body: []byte("x")})
	var se *remoting.Refusal
	if !errors.As(err, &se) || se.Code != remoting.TopicNotExist {
		t.Fatalf("send to a missing topic: %v", err)
	}
}

// Offsets and lag follow the sends and the group's commits; a delay-level
// message counts only once delivered.
func TestOffsetsAndLag(t *testing.T) {
	t.Parallel()
	srv := Start(t)
	const topic, group = "Lagging", "LagGroup"
	srv.CreateTopic(topic, 2)
	for i := range 5 {
		if _, err := srv.Send(Message{Topic: topic, QueueID: i % 2, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if srv.MinOffset(topic, 0) != 0 || srv.MaxOffset(topic, 0) != 3 || srv.MaxOffset(topic, 1) != 2 {
		t.Fatalf("offsets: q0 %d..%d, q1 max %d", srv.MinOffset(topic, 0), srv.MaxOffset(topic, 0), srv.MaxOffset(topic, 1))
	}
	if off, ok := srv.CommittedOffset(group, topic, 0); ok {
		t.Fatalf("committed offset %d before any commit", off)
	}
	if lag := srv.Lag(group, topic); lag != 5 {
		t.Fatalf("lag %d before any commit, want 5", lag)
	}
	srv.b.Clients().Offsets.Commit(group, topic, 0, 2)
	if off, ok := srv.CommittedOffset(group, topic, 0); !ok || off != 2 {
		t.Fatalf("committed offset %d %v", off, ok)
	}
	if lag := srv.Lag(group, topic); lag != 3 {
		t.Fatalf("lag %d, want 1 + 2", lag)
	}
	if _, err := srv.Send(Message{Topic: topic, Body: []byte("later"), Properties: map[string]string{"DELAY": "3"}}); err != nil { // 10 s
		t.Fatal(err)
	}
	if lag := srv.Lag(group, topic); lag != 3 {
		t.Fatalf("lag %d with an undelivered delay message, want 3", lag)
	}
	srv.FastForward(10 * time.Second)
	if lag := srv.Lag(group, topic); lag != 4 {
		t.Fatalf("lag %d after the delay message's delivery, want 4", lag)
	}
	if srv.Lag(group, "NoSuchTopic") != 0 || srv.MaxOffset("NoSuchTopic", 0) != 0 {
		t.Fatal("a missing topic has a lag or an offset")
	}
}
