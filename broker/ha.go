package broker

import (
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/rmqio/rmq/broker/replicas"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/store/ha"
	"github.com/rmqio/rmq/store/ha/autoswitch"
)

// Replication: the HA service of a master (ASYNC_MASTER, SYNC_MASTER) and
// the HA client of a SLAVE, both in package store/ha, and the SYNC_MASTER
// wait of a send.
//
// A SYNC_MASTER answers a send once a slave acked its bytes, as 4.9.8's
// CommitLog.submitReplicaRequest with GroupTransferService does:
// SLAVE_NOT_AVAILABLE (11) at once when no slave is connected or the
// acked offset is haSlaveFallbehindMax or more behind, FLUSH_SLAVE_TIMEOUT
// (12) after slaveTimeout; the message is stored either way. The replica
// result overrides the flush result (SYNC_FLUSH's FLUSH_DISK_TIMEOUT). A
// message with WAIT=false, and a oneway send, do not wait. The wait holds
// no goroutine: the answer is written from the ack (or the expiry), as a
// SYNC_FLUSH answer is written from the flush (OnFlushed).

// HAConfig is the replication keys.
type HAConfig struct {
	// HaListenPort is the HA port only with HaListenPortEnable (5.x
	// behaviour); 4.9.8 listens on listenPort+1 whatever it says.
	HaListenPort int `conf:"haListenPort"`
	// HaListenPortEnable (rmq) honours a haListenPort > 0 as 5.x does.
	HaListenPortEnable      bool  `conf:"haListenPortEnable"`
	HaSendHeartbeatInterval int   `conf:"haSendHeartbeatInterval"` // ms
	HaHousekeepingInterval  int   `conf:"haHousekeepingInterval"`  // ms
	HaTransferBatchSize     int   `conf:"haTransferBatchSize"`     // bytes, at most 4 MiB
	HaSlaveFallbehindMax    int64 `conf:"haSlaveFallbehindMax"`    // bytes
	// HaMaxGapNotInSync is 5.x's name of haSlaveFallbehindMax (5.x reads
	// only it); when set (> 0) it wins.
	HaMaxGapNotInSync int64 `conf:"haMaxGapNotInSync"`
	SlaveTimeout      int   `conf:"slaveTimeout"` // ms
}

func defaultHAConfig() HAConfig {
	return HAConfig{
		HaListenPort:            10912,
		HaSendHeartbeatInterval: 5000,
		HaHousekeepingInterval:  20000,
		HaTransferBatchSize:     32 << 10,
		HaSlaveFallbehindMax:    256 << 20,
		SlaveTimeout:            3000,
	}
}

func (c *HAConfig) validate() []error {
	var errs []error
	if c.HaListenPortEnable && (c.HaListenPort < 0 || c.HaListenPort > 65535) {
		errs = append(errs, fmt.Errorf("haListenPort %d out of range", c.HaListenPort))
	}
	if c.HaTransferBatchSize <= 0 || c.HaTransferBatchSize > ha.MaxBodySize {
		errs = append(errs, fmt.Errorf("haTransferBatchSize %d must be in (0, %d] (a stock slave's read buffer)", c.HaTransferBatchSize, ha.MaxBodySize))
	}
	for _, v := range []struct {
		key string
		ms  int
	}{{"haSendHeartbeatInterval", c.HaSendHeartbeatInterval}, {"haHousekeepingInterval", c.HaHousekeepingInterval}, {"slaveTimeout", c.SlaveTimeout}} {
		if v.ms <= 0 {
			errs = append(errs, fmt.Errorf("%s %d must be positive (ms)", v.key, v.ms))
		}
	}
	if c.fallBehindMax() <= 0 {
		errs = append(errs, fmt.Errorf("haSlaveFallbehindMax %d must be positive", c.HaSlaveFallbehindMax))
	}
	return errs
}

// fallBehindMax is haMaxGapNotInSync when set, else haSlaveFallbehindMax.
func (c *HAConfig) fallBehindMax() int64 {
	if c.HaMaxGapNotInSync > 0 {
		return c.HaMaxGapNotInSync
	}
	return c.HaSlaveFallbehindMax
}

// haPort is the port the HA service listens on and registers: listenPort+1
// as 4.9.8 (BrokerStartup overwrites haListenPort), or haListenPort with
// haListenPortEnable.
func (o *Options) haPort() int {
	if o.HaListenPortEnable && o.HaListenPort > 0 {
		return o.HaListenPort
	}
	return o.ListenPort + 1
}

func (o *Options) isSlave() bool      { return o.BrokerRole == "SLAVE" }
func (o *Options) isSyncMaster() bool { return o.BrokerRole == "SYNC_MASTER" }

// startHA starts the master's HA service or the slave's client.
func (b *Broker) startHA() error {
	o := &b.opts
	if b.ctl != nil {
		if err := b.ctl.ha.Start(); err != nil {
			return fmt.Errorf("broker: HA service: %w", err)
		}
		if ta, ok := b.ctl.ha.Addr().(*net.TCPAddr); ok {
			b.haPortBound.Store(int32(ta.Port))
		}
		return nil
	}
	if o.isSlave() {
		b.haClient = ha.NewClient(b.store, ha.ClientConfig{
			HeartbeatInterval:    time.Duration(o.HaSendHeartbeatInterval) * time.Millisecond,
			HousekeepingInterval: time.Duration(o.HaHousekeepingInterval) * time.Millisecond,
			ReconnectDelay:       o.haReconnectDelay,
			Clock:                b.clock,
			Logger:               componentLog(o.Logger, "ha"),
		})
		b.haClient.Start()
		return nil
	}
	port := o.haPort()
	if b.gate != nil && !(o.HaListenPortEnable && o.HaListenPort > 0) {
		port = 0 // ports from the system (listenPort 0): so is the HA port
	}
	m := ha.NewMaster(b.store, ha.MasterConfig{
		ListenAddr:           joinHostPort(o.ListenHost, port),
		HeartbeatInterval:    time.Duration(o.HaSendHeartbeatInterval) * time.Millisecond,
		HousekeepingInterval: time.Duration(o.HaHousekeepingInterval) * time.Millisecond,
		TransferBatchSize:    o.HaTransferBatchSize,
		FallBehindMax:        o.fallBehindMax(),
		SlaveTimeout:         time.Duration(o.SlaveTimeout) * time.Millisecond,
		Clock:                b.clock,
		Logger:               componentLog(o.Logger, "ha"),
	})
	if err := m.Start(); err != nil {
		return fmt.Errorf("broker: HA service: %w", err)
	}
	b.haMaster = m
	if ta, ok := m.Addr().(*net.TCPAddr); ok {
		b.haPortBound.Store(int32(ta.Port))
	}
	return nil
}

// stopHA closes the HA service or client (after the drain: waiting sends
// may still get their acks).
func (b *Broker) stopHA() error {
	if b.ctl != nil {
		b.ctl.ha.Close()
	}
	if b.haClient != nil {
		b.haClient.Close()
	}
	if b.haMaster != nil {
		return b.haMaster.Close()
	}
	return nil
}

// haServerAddr is the registration's haServerAddr: brokerIP2 and the HA
// port (the bound one when the system chose it).
func (b *Broker) haServerAddr(rc *runtimeConfig) string {
	port := b.opts.haPort()
	if p := b.haPortBound.Load(); p > 0 {
		port = int(p)
	}
	return joinHostPort(rc.BrokerIP2, port)
}

// SetHAMasterAddress points a SLAVE's HA client at its master's HA
// address (host:port; "" for none). It does nothing on a master.
func (b *Broker) SetHAMasterAddress(addr string) {
	if b.ctl != nil {
		b.ctl.ha.SetMasterHAAddr(addr)
		return
	}
	if b.haClient != nil {
		b.haClient.SetMasterAddr(addr)
	}
}

// HAMasterStats is the master side's replication state, and false on a
// broker that runs none (a SLAVE, or before Start).
func (b *Broker) HAMasterStats() (ha.MasterStats, bool) {
	if b.haMaster == nil {
		return ha.MasterStats{}, false
	}
	return b.haMaster.Stats(), true
}

// HAClientStats is the slave side's replication state, and false on a
// broker that runs none (a master, or before Start).
func (b *Broker) HAClientStats() (ha.ClientStats, bool) {
	if b.haClient == nil {
		return ha.ClientStats{}, false
	}
	return b.haClient.Stats(), true
}

// HAAddr is the address the HA service listens on ("" when none).
func (b *Broker) HAAddr() string {
	if b.haMaster == nil {
		return ""
	}
	return b.haMaster.Addr().String()
}

// afterPut calls done with the outcome code of a stored message once
// what it waits for is done: the SYNC_FLUSH flush of the commitlog up to
// end (flush) and a slave's ack of it (replica, on a SYNC_MASTER). The
// code is Success, FlushDiskTimeout, SlaveNotAvailable or
// FlushSlaveTimeout, the replica's result overriding the flush's (4.9.8
// asyncPutMessage's thenCombine). done runs once, on the caller's
// goroutine when nothing is waited for, else on the flusher's or the HA
// service's, and must not block.
func (b *Broker) afterPut(end int64, flush, replica bool, done func(code int32)) {
	var replicaCode int32
	rw := b.replicas()
	if replica && (rw == nil || !rw.IsSlaveOK(end)) {
		replicaCode, replica = remoting.SlaveNotAvailable, false
	}
	if !flush && !replica {
		done(replicaCode)
		return
	}
	w := &putWait{done: done, replicaCode: replicaCode}
	if flush && replica {
		w.left.Store(2)
	} else {
		w.left.Store(1)
	}
	if flush {
		b.store.OnFlushed(end, w.flushed)
	}
	if replica {
		rw.WaitReplicated(end, w.replicated)
	}
}

// replicaWaiter is the SYNC_MASTER wait of either HA service.
type replicaWaiter interface {
	IsSlaveOK(end int64) bool
	WaitReplicated(end int64, fn func(ok bool))
}

// replicas is the HA service a SYNC_MASTER send waits on: the AutoSwitch
// one in controller mode, else the classic master's; nil when none runs.
func (b *Broker) replicas() replicaWaiter {
	switch {
	case b.ctl != nil:
		return b.ctl.ha
	case b.haMaster != nil:
		return b.haMaster
	}
	return nil
}

// newAutoSwitchHA is the controller-mode HA service when Options does not
// name one: the AutoSwitch service over the store, its epoch table in
// storePathEpochFile, listening on the HA port (haPort, or one the system
// picks when the broker's ports are).
func newAutoSwitchHA(st *store.Store, o *Options, onSSS func([]int64)) (replicas.Service, error) {
	epochs, err := autoswitch.OpenEpochFile(o.FS, o.EpochFilePath(o.StorePathRootDir))
	if err != nil {
		return nil, err
	}
	port := o.haPort()
	if o.ListenPort == 0 && !(o.HaListenPortEnable && o.HaListenPort > 0) {
		port = 0
	}
	s := autoswitch.NewService(st, epochs, autoswitch.Config{
		ListenAddr:                joinHostPort(o.ListenHost, port),
		TransferBatchSize:         o.HaTransferBatchSize,
		HeartbeatInterval:         time.Duration(o.HaSendHeartbeatInterval) * time.Millisecond,
		HousekeepingInterval:      time.Duration(o.HaHousekeepingInterval) * time.Millisecond,
		MaxTimeSlaveNotCatchup:    time.Duration(o.HaMaxTimeSlaveNotCatchup) * time.Millisecond,
		CheckSyncStateSetInterval: time.Duration(o.CheckSyncStateSetPeriod) * time.Millisecond,
		AllAckInSyncStateSet:      o.AllAckInSyncStateSet,
		SyncFromLastFile:          o.SyncFromLastFile,
		AsyncLearner:              o.AsyncLearner,
		SlaveTimeout:              time.Duration(o.SlaveTimeout) * time.Millisecond,
		FallBehindMax:             o.fallBehindMax(),
		ReconnectDelay:            o.haReconnectDelay,
		OnSyncStateSetChange:      onSSS,
		Clock:                     o.Clock,
		Logger:                    componentLog(o.Logger, "ha"),
	})
	return autoSwitchHA{s}, nil
}

// autoSwitchHA gives the manager the service's epoch table in the terms
// it declares.
type autoSwitchHA struct{ *autoswitch.Service }

func (a autoSwitchHA) LastEpoch() int32 { return a.Epochs().LastEpoch() }

func (a autoSwitchHA) EpochEntries() []remoting.EpochEntry {
	es := a.Epochs().Entries()
	out := make([]remoting.EpochEntry, len(es))
	for i, e := range es {
		out[i] = remoting.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset, EndOffset: e.EndOffset}
	}
	return out
}

// putWait joins a put's flush and replica waits. Each side writes its own
// code before the atomic decrement; the last one reads both after it.
type putWait struct {
	left        atomic.Int32
	flushCode   int32
	replicaCode int32
	done        func(code int32)
}

func (w *putWait) flushed(ok bool) {
	if !ok {
		w.flushCode = remoting.FlushDiskTimeout
	}
	w.finish()
}

func (w *putWait) replicated(ok bool) {
	if !ok {
		w.replicaCode = remoting.FlushSlaveTimeout
	}
	w.finish()
}

func (w *putWait) finish() {
	if w.left.Add(-1) != 0 {
		return
	}
	code := remoting.Success
	if w.flushCode != 0 {
		code = w.flushCode
	}
	if w.replicaCode != 0 {
		code = w.replicaCode
	}
	w.done(code)
}
