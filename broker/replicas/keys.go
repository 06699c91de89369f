package replicas

import (
	"fmt"
	"math"
	"net"
	"path/filepath"
	"strings"
	"time"
)

// Keys are the controller-mode keys (5.3.3 BrokerConfig :349-370 and
// MessageStoreConfig :327-386, 762, 773), embedded in the broker's
// Options. With EnableControllerMode false none of them acts.
type Keys struct {
	EnableControllerMode bool `conf:"enableControllerMode"`
	// ControllerAddr is the controllers' addresses, ';'-separated; with
	// FetchControllerAddrByDnsLookup it is one host:port whose host is
	// looked up (every address it has, at the port), again every 2 min.
	ControllerAddr                 string `conf:"controllerAddr"`
	FetchControllerAddrByDnsLookup bool   `conf:"fetchControllerAddrByDnsLookup"`
	SyncBrokerMetadataPeriod       int    `conf:"syncBrokerMetadataPeriod"`     // ms, the 1004 task
	CheckSyncStateSetPeriod        int    `conf:"checkSyncStateSetPeriod"`      // ms, the 1001 retry
	SyncControllerMetadataPeriod   int    `conf:"syncControllerMetadataPeriod"` // ms, the 1005 task
	// ControllerHeartBeatTimeoutMills is the expiry each heartbeat asks of
	// the controller.
	ControllerHeartBeatTimeoutMills int64 `conf:"controllerHeartBeatTimeoutMills"`
	// BrokerElectionPriority: the lower, the likelier this broker is
	// elected among equals (epoch, then max offset).
	BrokerElectionPriority int `conf:"brokerElectionPriority"`
	// AllAckInSyncStateSet: a SYNC_MASTER send waits for every member of
	// the sync state set, and the confirm offset is their least ack.
	AllAckInSyncStateSet bool `conf:"allAckInSyncStateSet"`
	// MinInSyncReplicas: sends are refused (IN_SYNC_REPLICAS_NOT_ENOUGH)
	// while the sync state set is smaller. InSyncReplicas is how many
	// replicas (the master included) a SYNC_MASTER send waits for without
	// AllAckInSyncStateSet (the AutoSwitch service's WaitReplicated).
	MinInSyncReplicas int `conf:"minInSyncReplicas"`
	InSyncReplicas    int `conf:"inSyncReplicas"`
	// HaMaxTimeSlaveNotCatchup (ms): a slave that has not caught up for
	// this long leaves the sync state set.
	HaMaxTimeSlaveNotCatchup int64 `conf:"haMaxTimeSlaveNotCatchup"`
	// SyncFromLastFile: a new slave starts from the master's last
	// commitlog file instead of its first.
	SyncFromLastFile bool `conf:"syncFromLastFile"`
	// AsyncLearner: the slave replicates but never joins the set.
	AsyncLearner bool `conf:"asyncLearner"`
	// StorePathEpochFile and StorePathBrokerIdentity: empty means
	// <storePathRootDir>/epochFileCheckpoint and .../brokerIdentity.
	StorePathEpochFile      string `conf:"storePathEpochFile"`
	StorePathBrokerIdentity string `conf:"storePathBrokerIdentity"`
}

// DefaultKeys are the stock defaults.
func DefaultKeys() Keys {
	return Keys{
		SyncBrokerMetadataPeriod: 5000, CheckSyncStateSetPeriod: 5000, SyncControllerMetadataPeriod: 10000,
		ControllerHeartBeatTimeoutMills: 10000, BrokerElectionPriority: 1<<31 - 1,
		MinInSyncReplicas: 1, InSyncReplicas: 1, HaMaxTimeSlaveNotCatchup: 15000,
	}
}

// Validate checks the keys in controller mode (nothing otherwise).
// dledger is enableDLegerCommitLog, which stock refuses with it (exit -4).
func (k *Keys) Validate(dledger bool) []error {
	if !k.EnableControllerMode {
		return nil
	}
	var errs []error
	if dledger {
		errs = append(errs, fmt.Errorf("enableControllerMode and enableDLegerCommitLog cannot both be true"))
	}
	if len(SplitAddrs(k.ControllerAddr)) == 0 {
		errs = append(errs, fmt.Errorf("enableControllerMode needs controllerAddr"))
	}
	for _, v := range []struct {
		key string
		ms  int64
	}{
		{"syncBrokerMetadataPeriod", int64(k.SyncBrokerMetadataPeriod)}, {"checkSyncStateSetPeriod", int64(k.CheckSyncStateSetPeriod)},
		{"syncControllerMetadataPeriod", int64(k.SyncControllerMetadataPeriod)}, {"controllerHeartBeatTimeoutMills", k.ControllerHeartBeatTimeoutMills},
		{"haMaxTimeSlaveNotCatchup", k.HaMaxTimeSlaveNotCatchup},
	} {
		if v.ms <= 0 {
			errs = append(errs, fmt.Errorf("%s %d must be positive (ms)", v.key, v.ms))
		}
	}
	if k.BrokerElectionPriority < math.MinInt32 || k.BrokerElectionPriority > math.MaxInt32 {
		// A Java int, carried as one in every heartbeat: wider would wrap.
		errs = append(errs, fmt.Errorf("brokerElectionPriority %d is not a 32-bit int", k.BrokerElectionPriority))
	}
	if k.MinInSyncReplicas < 1 || k.InSyncReplicas < 1 {
		errs = append(errs, fmt.Errorf("minInSyncReplicas %d and inSyncReplicas %d must be at least 1", k.MinInSyncReplicas, k.InSyncReplicas))
	}
	return errs
}

// EpochFilePath and IdentityPath are the files under root by default.
func (k *Keys) EpochFilePath(root string) string {
	if k.StorePathEpochFile != "" {
		return k.StorePathEpochFile
	}
	return filepath.Join(root, "epochFileCheckpoint")
}

func (k *Keys) IdentityPath(root string) string {
	if k.StorePathBrokerIdentity != "" {
		return k.StorePathBrokerIdentity
	}
	return filepath.Join(root, "brokerIdentity")
}

// Durations of the periods.
func (k *Keys) periods() (syncBroker, checkSSS, syncController, hbTimeout time.Duration) {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	return ms(int64(k.SyncBrokerMetadataPeriod)), ms(int64(k.CheckSyncStateSetPeriod)),
		ms(int64(k.SyncControllerMetadataPeriod)), ms(k.ControllerHeartBeatTimeoutMills)
}

// SplitAddrs splits controllerAddr on ';', dropping blanks.
func SplitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Resolver returns the controller addresses as stock's updateControllerAddr
// does: the ';' list, or with FetchControllerAddrByDnsLookup every address
// of the host at its port (a failed lookup keeps the previous list: the
// manager ignores an empty answer).
func (k *Keys) Resolver(lookup func(host string) ([]string, error)) func() []string {
	addr, dns := k.ControllerAddr, k.FetchControllerAddrByDnsLookup
	if lookup == nil {
		lookup = net.LookupHost
	}
	return func() []string {
		if !dns {
			return SplitAddrs(addr)
		}
		host, port, err := net.SplitHostPort(strings.TrimSpace(addr))
		if err != nil {
			return nil
		}
		ips, err := lookup(host)
		if err != nil {
			return nil
		}
		out := make([]string, 0, len(ips))
		for _, ip := range ips {
			out = append(out, net.JoinHostPort(ip, port))
		}
		return out
	}
}

// ConfigFrom fills the manager's periods from the keys.
func (k *Keys) ConfigFrom(c *Config) {
	c.SyncBrokerMetadataPeriod, c.CheckSyncStateSetPeriod, c.SyncControllerMetadataPeriod, c.ControllerHeartbeatTimeout = k.periods()
	c.ElectionPriority = int32(k.BrokerElectionPriority)
	c.ControllerAddrs = k.Resolver(nil)
}
