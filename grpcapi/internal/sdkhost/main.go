// Command sdkhost runs a broker and its gRPC endpoint for the stock Go 5.x
// SDK tests (integration/grpcsdk): the server runs here, in a process of its
// own (see integration/grpcsdk's package doc), and the test drives it over stdin: one
// command a line, one answer a line ("ok ..." or "err ..."). With -manual-clock
// the broker runs on a manual clock the test advances, as the in-process tests
// do. EOF on stdin shuts it down.
//
// Commands:
//
//	topic NAME QUEUES     create a read-write topic
//	offset TOPIC QUEUE    the queue's max offset
//	counts TOPIC N        the max offsets of queues 0..N-1
//	pop                   pop stats: in flight, revived, dispatch behind
//	advance MILLIS        advance the manual clock
//	orderly GROUP         make GROUP a consumeMessageOrderly group
//	fifoqueue GROUP N     the queue of N a FIFO message of GROUP goes to
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/grpcapi"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/topicgroup"
)

func main() {
	store := flag.String("store", "", "store directory (required)")
	port := flag.Int("listen-port", 0, "broker remoting port (required; port-2 must be free too)")
	manual := flag.Bool("manual-clock", false, "run the broker on a manual clock (command advance)")
	minPoll := flag.Int64("min-long-polling", 0, "grpc MinLongPollingMillis (0: default)")
	maxPoll := flag.Int64("max-long-polling", 0, "grpc MaxLongPollingMillis (0: default)")
	txCheck := flag.Bool("fast-tx-check", false, "check half messages every 50 ms after 1 s")
	aclFile := flag.String("acl-file", "", "enable the plain ACL with this plain_acl.yml")
	authOn := flag.Bool("auth", false, "turn on ACL 2.0 (authentication and authorization) with the users and ACLs of <store>/config/auth.json")
	flag.Parse()
	if *store == "" || *port == 0 {
		fmt.Fprintln(os.Stderr, "sdkhost: -store and -listen-port are required")
		os.Exit(2)
	}
	if err := run(*store, *port, *manual, *minPoll, *maxPoll, *txCheck, *aclFile, *authOn); err != nil {
		fmt.Fprintln(os.Stderr, "sdkhost:", err)
		os.Exit(1)
	}
}

func run(store string, port int, manual bool, minPoll, maxPoll int64, txCheck bool, aclFile string, authOn bool) error {
	o := broker.DefaultOptions()
	o.AclEnable, o.AclFile = aclFile != "", aclFile
	if authOn {
		o.AuthenticationEnabled, o.AuthorizationEnabled = true, true
		o.AuthenticationMetadataProvider, o.AuthorizationMetadataProvider = "local", "local"
	}
	o.StorePathRootDir = store
	o.ListenHost = "127.0.0.1"
	o.BrokerIP1 = "127.0.0.1"
	o.ListenPort = port
	o.MappedFileSizeCommitLog = 1 << 20
	o.MappedFileSizeConsumeQueue = 20 * 1024
	o.MaxMessageSize = 64 << 10
	o.Logger = zerolog.Nop()
	var clk *clock.Manual
	if manual {
		clk = clock.NewManual(time.Now().Truncate(time.Millisecond))
		o.Clock = clk
	}
	if txCheck {
		o.TransactionTimeOut = 1
		o.TransactionCheckInterval = 50
		// Checks every 50 ms would spend the stock budget of 15 in under a
		// second on a busy machine, before the checker's COMMIT arrives.
		o.TransactionCheckMax = 100000
	}
	b, err := broker.New(o)
	if err != nil {
		return err
	}
	if err := b.Start(); err != nil {
		_ = b.Shutdown()
		return err
	}
	g := grpcapi.DefaultOptions()
	g.Port = 0
	// The SDK suites send every kind of message to untyped topics; the
	// stock proxy's type check (on by default) is tested in grpcapi.
	g.EnableTopicMessageTypeCheck = false
	g.Logger = o.Logger
	if minPoll > 0 {
		g.MinLongPollingMillis = minPoll
	}
	if maxPoll > 0 {
		g.MaxLongPollingMillis = maxPoll
	}
	srv := grpcapi.New(b, g)
	if err := srv.Start(); err != nil {
		_ = b.Shutdown()
		return err
	}
	fmt.Printf("ready %s\n", srv.Addr())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		reply, err := serve(b, clk, strings.Fields(in.Text()))
		if err != nil {
			fmt.Printf("err %v\n", err)
			continue
		}
		fmt.Printf("ok %s\n", reply)
	}
	srv.Stop()
	return b.Shutdown()
}

// serve runs one command.
func serve(b *broker.Broker, clk *clock.Manual, args []string) (string, error) {
	num := func(i int) (int64, error) {
		if i >= len(args) {
			return 0, fmt.Errorf("%s: missing argument %d", args[0], i)
		}
		return strconv.ParseInt(args[i], 10, 64)
	}
	if len(args) == 0 {
		return "", fmt.Errorf("empty command")
	}
	switch args[0] {
	case "topic":
		n, err := num(2)
		if err != nil {
			return "", err
		}
		b.Topics().Update(&topicgroup.TopicConfig{TopicName: args[1], ReadQueueNums: int32(n), WriteQueueNums: int32(n),
			Perm: topicgroup.PermRead | topicgroup.PermWrite, TopicFilterType: "SINGLE_TAG"})
		return "", nil
	case "offset":
		q, err := num(2)
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(b.Store().MaxOffsetInQueue(args[1], int32(q)), 10), nil
	case "counts":
		n, err := num(2)
		if err != nil {
			return "", err
		}
		out := make([]string, n)
		for q := range n {
			out[q] = strconv.FormatInt(b.Store().MaxOffsetInQueue(args[1], int32(q)), 10)
		}
		return strings.Join(out, " "), nil
	case "pop":
		st := b.Pop().Stats()
		return fmt.Sprintf("%d %d %d", st.InFlight, st.Revived, b.Store().DispatchBehind()), nil
	case "advance":
		ms, err := num(1)
		if err != nil {
			return "", err
		}
		if clk == nil {
			return "", fmt.Errorf("advance: no manual clock (-manual-clock)")
		}
		clk.Advance(time.Duration(ms) * time.Millisecond)
		return "", nil
	case "fifoqueue":
		n, err := num(2)
		if err != nil {
			return "", err
		}
		return strconv.Itoa(grpcapi.MessageGroupQueue(args[1], int(n))), nil
	case "orderly":
		if len(args) < 2 {
			return "", fmt.Errorf("orderly: missing group")
		}
		g := topicgroup.NewSubscriptionGroupConfig(args[1])
		g.ConsumeMessageOrderly = true
		return "", b.Clients().SubGroups.Update(g)
	}
	return "", fmt.Errorf("unknown command %q", args[0])
}
