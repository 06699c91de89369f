package store

import "errors"

// ErrSlave: the store belongs to a SLAVE broker, whose commitlog grows only
// by replication from its master; every put is refused. 4.9.8's
// DefaultMessageStore.checkStoreStatus answers SERVICE_NOT_AVAILABLE for it,
// which is what the broker maps it to (and PutStatusName names it).
var ErrSlave = errors.New("store: the broker's role is SLAVE: messages are stored only by replication from its master")

// SetSlave makes every later put fail with ErrSlave (on), or accepts puts
// again (off). The broker sets it at start from brokerRole; appends of
// replicated bytes do not go through the put path and are not affected.
func (s *Store) SetSlave(on bool) { s.slave.Store(on) }

// IsSlave reports whether puts are refused with ErrSlave.
func (s *Store) IsSlave() bool { return s.slave.Load() }
