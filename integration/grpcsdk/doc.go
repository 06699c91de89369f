// Package grpcapi's tests with the stock Go 5.x SDK,
// github.com/apache/rocketmq-clients/golang/v5, live here (its _test.go files
// only). The broker and its gRPC endpoint run in a process of their own,
// grpcapi/internal/sdkhost, which TestMain builds; each test starts one and
// drives it over stdin (topics, offsets, pop stats, its manual clock). (That
// split dates from when grpcapi/apiv2 registered the same proto names as the
// SDK's generated copy and the two could not share a binary; they can now,
// see integration/apiv2sdk.)
//
//	test ──Go SDK (TLS)──► sdkhost: broker + grpcapi on 127.0.0.1:random
//	     ──stdin lines───► sdkhost (topic, offset, pop, advance, orderly, fifoqueue)
//
// The SDK races with itself (its meter provider's Reset on a Settings command
// against a send's isEnabled), so these tests run without the race detector
// only; grpcapi's raw gRPC tests cover the endpoint under it. With -short
// every test is skipped.
package grpcsdk
