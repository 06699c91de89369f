package rmqtest

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"
)

// queryRoute asks the gRPC endpoint for topic's route and returns the port
// of the endpoint it names.
func queryRoute(t *testing.T, addr, topic string) int32 {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := v2.NewMessagingServiceClient(conn).QueryRoute(ctx, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: topic}})
	if err != nil || r.Status.Code != v2.Code_OK || len(r.MessageQueues) == 0 {
		t.Fatalf("QueryRoute %s on %s: %v %v", topic, addr, r, err)
	}
	return r.MessageQueues[0].Broker.Endpoints.Addresses[0].Port
}

// WithGRPC serves the 5.x endpoint on a free port, which routes to itself,
// and a restart serves it again on the same port.
func TestWithGRPCServesAcrossRestart(t *testing.T) {
	t.Parallel()
	srv := Start(t, WithGRPC())
	srv.CreateTopic("GrpcTopic", 2)
	addr := srv.GRPCAddr()
	if addr == "" {
		t.Fatal("no gRPC address")
	}
	port := srv.gs.Addr().Port()
	if got := queryRoute(t, addr, "GrpcTopic"); got != int32(port) {
		t.Fatalf("route names port %d, endpoint on %d", got, port)
	}
	if err := srv.RestartCrash(); err != nil {
		t.Fatal(err)
	}
	if srv.GRPCAddr() != addr {
		t.Fatalf("gRPC on %s after the restart, %s before", srv.GRPCAddr(), addr)
	}
	if got := queryRoute(t, addr, "GrpcTopic"); got != int32(port) {
		t.Fatalf("after the restart the route names port %d, endpoint on %d", got, port)
	}
	if Start(t).GRPCAddr() != "" {
		t.Fatal("a gRPC endpoint without WithGRPC")
	}
}
