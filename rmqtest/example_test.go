package rmqtest_test

import (
	"fmt"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/rmqtest"
)

// A test starts its own server; t.Cleanup stops it. A message sent with
// delay level 16 (30 minutes) is delivered by a FastForward of 30 minutes
// in milliseconds. The examples here send with Send, without a client; a
// test of an application gives its clients srv.NamesrvAddr() instead
// (primitive.NewPassthroughResolver with the Go client).
func ExampleStart() {
	testUnpaidOrderIsCancelled := func(t *testing.T) {
		srv := rmqtest.Start(t)
		srv.CreateTopic("Orders", 1)
		if _, err := srv.Send(rmqtest.Message{Topic: "Orders", Body: []byte("cancel order 42"),
			Properties: map[string]string{"DELAY": "16"}}); err != nil {
			t.Fatal(err)
		}
		srv.FastForward(30 * time.Minute)
		msgs, err := srv.Messages("Orders")
		if err != nil || len(msgs) != 1 {
			t.Fatalf("Orders holds %v (%v)", msgs, err)
		}
	}
	_ = testUnpaidOrderIsCancelled // a func TestXxx(t *testing.T) in a _test.go file
}

// FastForward delivers what falls due within the jump in due order, each at
// its time on the broker's virtual clock (Now), never before.
func ExampleServer_FastForward() {
	srv, err := rmqtest.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	srv.CreateTopic("Reminders", 1)
	sent := srv.Now()
	// A timer message due in 2 hours and a delay-level message (level 3:
	// 10 seconds).
	deliverAt := sent.Add(2 * time.Hour).UnixMilli()
	mustSend(srv, rmqtest.Message{Topic: "Reminders", Body: []byte("in 2 h"),
		Properties: map[string]string{"TIMER_DELIVER_MS": fmt.Sprint(deliverAt)}})
	mustSend(srv, rmqtest.Message{Topic: "Reminders", Body: []byte("in 10 s"),
		Properties: map[string]string{"DELAY": "3"}})

	srv.FastForward(time.Hour)
	printDelivered(srv, "Reminders", sent)
	srv.FastForward(time.Hour)
	printDelivered(srv, "Reminders", sent)
	// Output:
	// [in 10 s after 10s]
	// [in 10 s after 10s in 2 h after 2h0m0s]
}

// mustSend stores m or ends the example.
func mustSend(srv *rmqtest.Server, m rmqtest.Message) {
	if _, err := srv.Send(m); err != nil {
		log.Fatal(err)
	}
}

// printDelivered prints the bodies of topic's messages with their delivery time after
// sent, rounded to the second.
func printDelivered(srv *rmqtest.Server, topic string, sent time.Time) {
	msgs, err := srv.Messages(topic)
	if err != nil {
		log.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		out = append(out, string(m.Body)+" after "+m.StoreTime.Sub(sent).Round(time.Second).String())
	}
	fmt.Println(out)
}

// Run starts one server for every test of a binary, in TestMain:
//
//	var srv *rmqtest.Server
//
//	func TestMain(m *testing.M) {
//		var err error
//		if srv, err = rmqtest.Run(); err != nil {
//			log.Fatal(err)
//		}
//		code := m.Run()
//		srv.Close()
//		os.Exit(code)
//	}
//
//	func TestOrders(t *testing.T) {
//		srv := srv.T(t) // CreateTopic, FastForward, ... fail this test
//		srv.CreateTopic("Orders", 4)
//		// ...
//	}
//
// Tests sharing the server share its topics, groups and virtual clock:
// give each test its own topic and group names.
func ExampleRun() {
	srv, err := rmqtest.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	fmt.Println(strings.HasPrefix(srv.NamesrvAddr(), "127.0.0.1:"), strings.HasPrefix(srv.BrokerAddr(), "127.0.0.1:"))
	// Output: true true
}

// Restart and RestartCrash keep the store, the ports and the name server:
// clients reconnect, and what was stored before is there after, a crash
// included.
func ExampleServer_RestartCrash() {
	srv, err := rmqtest.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	srv.CreateTopic("Payments", 1)
	mustSend(srv, rmqtest.Message{Topic: "Payments", Body: []byte("paid 42")})
	addr := srv.BrokerAddr()

	if err := srv.RestartCrash(); err != nil { // as after kill -9
		log.Fatal(err)
	}
	mustSend(srv, rmqtest.Message{Topic: "Payments", Body: []byte("paid 43")})
	if err := srv.Restart(); err != nil { // a clean stop and start
		log.Fatal(err)
	}
	msgs, err := srv.Messages("Payments")
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		fmt.Println(m.QueueOffset, string(m.Body))
	}
	fmt.Println(srv.BrokerAddr() == addr)
	// Output:
	// 0 paid 42
	// 1 paid 43
	// true
}

// WithGRPC also serves the endpoint of the 5.x SDKs (gRPC); give them
// GRPCAddr as their endpoints.
func ExampleWithGRPC() {
	srv, err := rmqtest.Run(rmqtest.WithGRPC())
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	fmt.Println(strings.HasPrefix(srv.GRPCAddr(), "127.0.0.1:"))
	// Output: true
}

// Messages reads back what the broker stored on a topic; MaxOffset,
// CommittedOffset and Lag say where its queues and a consumer group stand.
func ExampleServer_Messages() {
	srv, err := rmqtest.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	srv.CreateTopic("Orders", 2)
	mustSend(srv, rmqtest.Message{Topic: "Orders", QueueID: 0, Body: []byte("order 1"), Tags: "new", Keys: []string{"o-1"}})
	mustSend(srv, rmqtest.Message{Topic: "Orders", QueueID: 1, Body: []byte("order 2"), Tags: "paid", Keys: []string{"o-2", "c-7"},
		Properties: map[string]string{"region": "eu"}})

	msgs, err := srv.Messages("Orders")
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		fmt.Printf("queue %d offset %d: %s tags=%s keys=%v region=%q\n", m.QueueID, m.QueueOffset, m.Body, m.Tags, m.Keys, m.Properties["region"])
	}
	fmt.Println("max offset of queue 1:", srv.MaxOffset("Orders", 1))
	_, committed := srv.CommittedOffset("Billing", "Orders", 0)
	fmt.Println("Billing committed:", committed, "lag:", srv.Lag("Billing", "Orders"))
	// Output:
	// queue 0 offset 0: order 1 tags=new keys=[o-1] region=""
	// queue 1 offset 0: order 2 tags=paid keys=[o-2 c-7] region="eu"
	// max offset of queue 1: 1
	// Billing committed: false lag: 2
}
