package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// proxyReady is the line the stock proxy prints on stdout once its broker
// (Local mode) and its gRPC server run (ProxyStartup.main).
const proxyReady = "rocketmq-proxy startup successfully"

// grpcShutdown bounds the proxy's graceful stop of its gRPC server (30 s
// stock) so that a run does not wait on it; nothing is measured then.
const grpcShutdown = 3

// proxyConfig is the rmq-proxy.json of workload k's Java peer: the stock
// distribution/conf/rmq-proxy.json (the cluster name) plus the ports, and
// the topic message type check off, and a short gRPC shutdown. That check (ProducerProcessor,
// DefaultTopicMessageTypeValidator) refuses a NORMAL or DELAY message on a
// topic whose message.type attribute differs, and the topics here are made
// with updateTopic without attributes. rmq's gRPC endpoint has the same
// check, on by default as stock, and workload k turns it off the same way
// (grpcWorkloads).
func proxyConfig(nsPort, grpcPort, remotingPort int) ([]byte, error) {
	return json.MarshalIndent(map[string]any{
		"rocketMQClusterName":         benchCluster,
		"namesrvAddr":                 fmt.Sprintf("127.0.0.1:%d", nsPort),
		"grpcServerPort":              grpcPort,
		"remotingListenPort":          remotingPort,
		"enableTopicMessageTypeCheck": false,
		"grpcShutdownTimeSeconds":     grpcShutdown,
	}, "", "  ")
}

// proxyArgv writes broker.conf and rmq-proxy.json into dir and returns the
// command line of the stock proxy in Local mode (ProxyStartup -pm local):
// one JVM holding the broker (listening on port, registered with the name
// server) and the gRPC endpoint on grpcPort. The proxy's own remoting port,
// which nothing here uses, is a fresh free port.
func (t *target) proxyArgv(dir string, nsPort, port, grpcPort int, flush string, extra []string) ([]string, []string, error) {
	home, err := prepareJavaHome(dir)
	if err != nil {
		return nil, nil, err
	}
	conf := filepath.Join(dir, "broker.conf")
	if err := os.WriteFile(conf, []byte(brokerConf(dir, nsPort, port, flush, home, append(slices.Clone(t.conf), extra...))), 0o644); err != nil {
		return nil, nil, err
	}
	remoting, err := freePort()
	if err != nil {
		return nil, nil, err
	}
	pc, err := proxyConfig(nsPort, grpcPort, remoting)
	if err != nil {
		return nil, nil, err
	}
	pconf := filepath.Join(dir, "rmq-proxy.json")
	if err := os.WriteFile(pconf, pc, 0o644); err != nil {
		return nil, nil, err
	}
	argv := append([]string{"java"}, jvmBroker...)
	argv = append(argv, jvmOpens...)
	argv = append(argv, "-Duser.home="+dir, "-Drmq.logback.configurationFile=rmq.proxy.logback.xml",
		"-cp", filepath.Join(t.lib, "*"), "org.apache.rocketmq.proxy.ProxyStartup",
		"-pm", "local", "-bc", conf, "-pc", pconf, "-n", fmt.Sprintf("127.0.0.1:%d", nsPort))
	return argv, []string{"ROCKETMQ_HOME=" + home, "RMQ_PROXY_HOME=" + home}, nil
}
