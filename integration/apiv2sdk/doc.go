// Package apiv2sdk links grpcapi/apiv2 beside the 5.x Go SDK's own
// generated package (github.com/apache/rocketmq-clients/golang/v5/protocol/v2)
// and checks that both speak one wire format, and runs the SDK's producer and
// simple consumer against an rmqtest server in the same process (without
// the race detector: the SDK races with itself). Its _test.go files only; it
// sits in the integration module with the other SDK tests so that rmq's own
// go.mod needs no SDK (see integration/doc.go).
package apiv2sdk
