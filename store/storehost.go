package store

import (
	"fmt"
	"net/netip"
)

// StoreHost is the address written as STOREHOST into records stored from now
// on and encoded in their offsetMsgIds: Options.StoreHost until SetStoreHost
// changes it.
func (s *Store) StoreHost() netip.AddrPort {
	if h := s.storeHost.Load(); h != nil {
		return *h
	}
	return s.opts.StoreHost
}

// SetStoreHost changes the store host of the records stored after it returns
// (a broker whose advertised address changed at run time). Records already
// stored keep theirs, and so do their offsetMsgIds. A put running
// concurrently uses one address or the other for each record, and the
// offsetMsgId it returns for a record always matches that record.
func (s *Store) SetStoreHost(h netip.AddrPort) error {
	h = netip.AddrPortFrom(h.Addr().Unmap(), h.Port())
	if !h.Addr().Is4() {
		return fmt.Errorf("%w: StoreHost %s", ErrHostNotIPv4, h)
	}
	s.storeHost.Store(&h)
	return nil
}
