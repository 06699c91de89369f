package integration

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/remoting"
)

// serializeTypes are the two header encodings a server must read.
var serializeTypes = []struct {
	name string
	st   byte
}{
	{name: "JSON", st: remoting.SerializeJSON},
	{name: "ROCKETMQ", st: remoting.SerializeRocketMQ},
}

// endpoints are the three listeners of a standalone process.
func endpoints(p *harness.Process) []struct{ name, addr string } {
	return []struct{ name, addr string }{
		{name: "namesrv", addr: p.NamesrvAddr()},
		{name: "broker", addr: p.BrokerAddr()},
		{name: "broker-vip", addr: p.BrokerVIPAddr()},
	}
}

// invoke sends one request in the given header encoding and checks the
// response framing: response flag, echoed opaque, request's serialize type.
func invoke(t *testing.T, cl *remoting.Client, addr string, st byte, req *remoting.Command) *remoting.Command {
	t.Helper()
	req.SerializeType = st
	resp, err := cl.InvokeTimeout(addr, req, 5*time.Second)
	if err != nil {
		t.Fatalf("request code %d to %s: %v", req.Code, addr, err)
	}
	if !resp.IsResponse() || resp.Opaque != req.Opaque {
		t.Errorf("response flag=%d opaque=%d to request opaque %d", resp.Flag, resp.Opaque, req.Opaque)
	}
	if resp.SerializeType != st {
		t.Errorf("response serialize type %d to a request of type %d", resp.SerializeType, st)
	}
	return resp
}

func TestUnknownRequestCode(t *testing.T) {
	p := sharedRMQ(t)
	cl := rawClient(t)
	for _, ep := range endpoints(p) {
		for _, ser := range serializeTypes {
			t.Run(ep.name+"/"+ser.name, func(t *testing.T) {
				resp := invoke(t, cl, ep.addr, ser.st, remoting.NewRequest(9999, map[string]string{"x": "y"}, nil))
				if resp.Code != remoting.RequestCodeNotSupported || !strings.Contains(resp.Remark, "not supported") {
					t.Fatalf("unknown code answered with code %d remark %q, want 3 and \"... not supported\"", resp.Code, resp.Remark)
				}
			})
		}
	}
}

func TestBothHeaderTypesAnswered(t *testing.T) {
	p := sharedRMQ(t)
	cl := rawClient(t)
	for _, ser := range serializeTypes {
		t.Run(ser.name, func(t *testing.T) {
			t.Run("namesrv route of TBW102", func(t *testing.T) {
				resp := invoke(t, cl, p.NamesrvAddr(), ser.st,
					remoting.NewRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": "TBW102"}, nil))
				if resp.Code != remoting.Success {
					t.Fatalf("code %d %q", resp.Code, resp.Remark)
				}
				var route remoting.TopicRouteData
				if err := remoting.UnmarshalBody(resp.Body, &route); err != nil {
					t.Fatalf("body %q: %v", resp.Body, err)
				}
				if len(route.BrokerDatas) != 1 || route.BrokerDatas[0].BrokerAddrs[0] != p.BrokerAddr() {
					t.Fatalf("route %s does not name %s", resp.Body, p.BrokerAddr())
				}
			})
			t.Run("namesrv cluster info", func(t *testing.T) {
				resp := invoke(t, cl, p.NamesrvAddr(), ser.st, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
				if resp.Code != remoting.Success {
					t.Fatalf("code %d %q", resp.Code, resp.Remark)
				}
				var info remoting.ClusterInfo
				if err := remoting.UnmarshalBody(resp.Body, &info); err != nil {
					t.Fatalf("body %q: %v", resp.Body, err)
				}
				if !slices.Contains(info.ClusterAddrTable["ItCluster"], "it-broker-a") {
					t.Fatalf("cluster info %s lacks ItCluster/it-broker-a", resp.Body)
				}
			})
			for _, ep := range endpoints(p)[1:] {
				t.Run(ep.name+" heartbeat", func(t *testing.T) {
					group, clientID := uniqueName(t, "cg"), uniqueName(t, "client")
					hb := remoting.HeartbeatData{
						ClientID: clientID,
						ConsumerDataSet: []*remoting.ConsumerData{{
							GroupName: group, ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING",
							ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
							SubscriptionDataSet: []*remoting.SubscriptionData{{
								Topic: "TBW102", SubString: "*", ExpressionType: "TAG", SubVersion: time.Now().UnixMilli(),
								TagsSet: []string{}, CodeSet: []remoting.FlexInt64{},
							}},
						}},
						ProducerDataSet: []*remoting.ProducerData{},
					}
					resp := invoke(t, cl, ep.addr, ser.st, remoting.NewRequest(remoting.HeartBeat, nil, remoting.MarshalBody(&hb)))
					if resp.Code != remoting.Success {
						t.Fatalf("HEART_BEAT: code %d %q", resp.Code, resp.Remark)
					}
					list := invoke(t, cl, ep.addr, ser.st,
						remoting.NewRequest(remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": group}, nil))
					var body remoting.ConsumerListBody
					if list.Code != remoting.Success || remoting.UnmarshalBody(list.Body, &body) != nil || !slices.Contains(body.ConsumerIDList, clientID) {
						t.Fatalf("GET_CONSUMER_LIST_BY_GROUP after heartbeat: code %d %q body %q, want %s listed", list.Code, list.Remark, list.Body, clientID)
					}
				})
			}
		})
	}
}

// frame builds raw bytes: a length prefix, a header-length word and the rest.
func frame(length uint32, headerWord uint32, rest []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, length)
	b = binary.BigEndian.AppendUint32(b, headerWord)
	return append(b, rest...)
}

func TestBrokenFramesCloseConnection(t *testing.T) {
	p := sharedRMQ(t)
	garbage := []byte("this is {not: json")
	binHeader := []byte{0, 105, 9, 1, 153} // a ROCKETMQ header cut after 5 of its 21 fixed bytes
	tests := []struct {
		name string
		data []byte
	}{
		{name: "length prefix just over 16 MiB", data: frame(16<<20-3, 0, nil)},
		{name: "length prefix 2 GiB", data: frame(0x7FFFFFFF, 0, nil)},
		{name: "negative length prefix", data: frame(0xFFFFFFF0, 0, nil)},
		{name: "garbage JSON header", data: frame(uint32(4+len(garbage)), uint32(len(garbage)), garbage)},
		{name: "unknown serialize type", data: frame(uint32(4+len(garbage)), 7<<24|uint32(len(garbage)), garbage)},
		{name: "header length beyond frame", data: frame(uint32(4+len(garbage)), 1000, garbage)},
		{name: "truncated ROCKETMQ header", data: frame(uint32(4+len(binHeader)), 1<<24|uint32(len(binHeader)), binHeader)},
	}
	for _, ep := range endpoints(p)[:2] {
		for _, tc := range tests {
			t.Run(ep.name+"/"+tc.name, func(t *testing.T) {
				conn, err := net.DialTimeout("tcp", ep.addr, 3*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				if _, err := conn.Write(tc.data); err != nil {
					t.Fatalf("write: %v", err)
				}
				conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				buf := make([]byte, 256)
				n, err := conn.Read(buf)
				switch {
				case n > 0:
					t.Fatalf("server answered a broken frame with %q", buf[:n])
				case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
				default:
					t.Fatalf("connection not closed by the server: %v", err)
				}
				checkHealthy(t, p)
			})
		}
	}
}

// checkHealthy asks the name server for a route over a fresh connection.
func checkHealthy(t *testing.T, p *harness.Process) {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	req := remoting.NewRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": "TBW102"}, nil)
	resp, err := cl.InvokeTimeout(p.NamesrvAddr(), req, 5*time.Second)
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("name server unhealthy afterwards: %v %v", err, resp)
	}
	hb := remoting.HeartbeatData{ClientID: "health-check", ConsumerDataSet: []*remoting.ConsumerData{}, ProducerDataSet: []*remoting.ProducerData{}}
	resp, err = cl.InvokeTimeout(p.BrokerAddr(), remoting.NewRequest(remoting.HeartBeat, nil, remoting.MarshalBody(&hb)), 5*time.Second)
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("broker unhealthy afterwards: %v %v", err, resp)
	}
}
