package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/remoting"
)

func TestErrorKey(t *testing.T) {
	tests := []struct {
		name string
		code int32
		err  error
		want string
	}{
		{name: "response code with a name", code: remoting.ServiceNotAvailable, want: "code 14 SERVICE_NOT_AVAILABLE"},
		{name: "system busy", code: remoting.SystemBusy, want: "code 2 SYSTEM_BUSY"},
		{name: "unknown code", code: 9999, want: "code 9999 UNKNOWN"},
		{name: "deadline", err: fmt.Errorf("invoke: %w", context.DeadlineExceeded), want: "timeout"},
		{name: "net timeout", err: &net.OpError{Op: "read", Err: timeoutErr{}}, want: "timeout"},
		{name: "other transport failure", err: errors.New("connection reset"), code: remoting.SystemBusy, want: "transport"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errorKey(tt.code, tt.err); got != tt.want {
				t.Errorf("errorKey(%d, %v) = %q, want %q", tt.code, tt.err, got, tt.want)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestSortedErrors(t *testing.T) {
	got := sortedErrors(map[string]int64{"timeout": 3, "code 2 SYSTEM_BUSY": 3, "transport": 1, "code 14 SERVICE_NOT_AVAILABLE": 7})
	want := []string{"code 14 SERVICE_NOT_AVAILABLE", "code 2 SYSTEM_BUSY", "timeout", "transport"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("sortedErrors = %q, want %q", got, want)
	}
}

func TestSummaryPrintErrors(t *testing.T) {
	tests := []struct {
		name   string
		errors map[string]int64
		want   string
	}{
		{name: "none", want: "errors:     none\n"},
		{
			name:   "by count then name",
			errors: map[string]int64{"transport": 1, "code 2 SYSTEM_BUSY": 4, "code 14 SERVICE_NOT_AVAILABLE": 4},
			want:   "errors:     code 14 SERVICE_NOT_AVAILABLE: 4, code 2 SYSTEM_BUSY: 4, transport: 1\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			s := &Summary{Mode: ModeProduce, Topic: "T", Sent: 3, SendFailed: 9, Errors: tt.errors}
			s.Print(&b)
			lines := strings.SplitAfter(b.String(), "\n")
			if len(lines) < 2 || lines[len(lines)-2] != tt.want {
				t.Errorf("summary:\n%s\nwant last line %q", b.String(), tt.want)
			}
		})
	}
}

// failingPeer is a name server and broker in one: it routes every topic to
// itself (one queue) and answers the n-th send by n mod 6 — 0 stored,
// 1..3 SERVICE_NOT_AVAILABLE, 4 SYSTEM_BUSY, 5 never (the sender times out).
type failingPeer struct {
	addr  string
	sends atomic.Int64
}

func (p *failingPeer) ServeRemoting(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	switch req.Code {
	case remoting.GetRouteinfoByTopic:
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.Body = []byte(fmt.Sprintf(`{"brokerDatas":[{"brokerAddrs":{0:%q},"brokerName":"broker-f","cluster":"FailCluster"}],"queueDatas":[{"brokerName":"broker-f","perm":6,"readQueueNums":1,"topicSysFlag":0,"writeQueueNums":1}]}`, p.addr))
		return resp
	case remoting.SendMessageV2:
		n := p.sends.Add(1) - 1
		switch n % 6 {
		case 0:
			resp := remoting.NewResponse(req, remoting.Success, "")
			resp.SetExt("msgId", strings.Repeat("0", 32))
			resp.SetExt("queueId", "0")
			resp.SetExt("queueOffset", fmt.Sprint(n))
			return resp
		case 1, 2, 3:
			return remoting.NewResponse(req, remoting.ServiceNotAvailable, "service not available now")
		case 4:
			return remoting.NewResponse(req, remoting.SystemBusy, "[PC_SYNCHRONIZED]broker busy")
		default:
			return nil // never answered
		}
	}
	return remoting.NewResponse(req, remoting.RequestCodeNotSupported, fmt.Sprintf("request type %d not supported", req.Code))
}

// TestRunCountsErrorsByCode: failed sends are counted by response code and
// name (and timeouts apart) and the summary prints them.
func TestRunCountsErrorsByCode(t *testing.T) {
	p := &failingPeer{addr: testutil.FreeAddr(t)}
	brokertest.Serve(t, p.addr, p)

	sum, err := Run(context.Background(), Options{
		Mode: ModeProduce, NamesrvAddr: p.addr, Topic: "BenchFail", Connections: 1, InFlight: 6,
		Count: 60, Duration: 30 * time.Second, SendTimeout: 300 * time.Millisecond, ReportInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	wantErrors := map[string]int64{"code 14 SERVICE_NOT_AVAILABLE": 30, "code 2 SYSTEM_BUSY": 10, "timeout": 10}
	if sum.Sent != 10 || sum.SendFailed != 50 || fmt.Sprint(sum.Errors) != fmt.Sprint(wantErrors) || sum.Latency.Count != 10 {
		t.Errorf("summary = %+v, want 10 sent, 50 failed, errors %v", sum, wantErrors)
	}
	var b bytes.Buffer
	sum.Print(&b)
	for _, want := range []string{
		"sent:       10 ok, 50 failed,",
		"errors:     code 14 SERVICE_NOT_AVAILABLE: 30, code 2 SYSTEM_BUSY: 10, timeout: 10\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
