// Package container runs the rmq image the way Testcontainers users start
// RocketMQ: the recipe's command and mqadmin updateBrokerConfig calls, with
// testcontainers-go, then a stock Go client through the mapped ports.
//
// It is a module of its own (go.mod here) so that testcontainers-go and the
// Docker client stay out of rmq's module graph; `make test-container` (part of
// `make test`) builds the image (make image) and runs it. The test skips, with
// the reason, when no Docker daemon answers or the image was not built.
package container
