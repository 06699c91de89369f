// Package autoswitch holds the two foundations of 5.3.3 controller-mode
// replication (AutoSwitchHAService) as library code, byte-compatible with
// rocketmq-all-5.3.3 so that rmq and Java brokers can replicate within one
// group. Nothing here is wired into the broker yet.
package autoswitch
