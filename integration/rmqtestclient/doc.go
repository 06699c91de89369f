// Package rmqtestclient tests package rmqtest the way its users use it: a
// stock Go client (github.com/apache/rocketmq-client-go/v2) producing to and
// consuming from rmqtest.Start's name server and broker, with the broker
// clock fast-forwarded. Its _test.go files only; it sits in the integration
// module so that importing rmqtest pulls no client into a user's module
// graph (see integration/doc.go).
package rmqtestclient
