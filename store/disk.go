package store

import "fmt"

// errDispatchStalled refuses puts while the dispatcher waits for space.
var errDispatchStalled = fmt.Errorf("%w: consume queue or index writes are waiting for disk space", ErrDiskFull)

// writeRefused returns the ErrDiskFull a put gets while the store refuses
// writes, or nil.
func (s *Store) writeRefused() error {
	if s.dispatchStalled.Load() {
		return errDispatchStalled
	}
	return nil
}
