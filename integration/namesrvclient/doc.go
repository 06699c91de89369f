// Package namesrvclient drives the name server (package namesrv) with the
// stock Go client's admin API (github.com/apache/rocketmq-client-go/v2):
// topic lists, publish queues and clusters as the client parses them. Its
// _test.go files only; it sits in the integration module so that rmq's own
// go.mod needs no client (see integration/doc.go).
package namesrvclient
