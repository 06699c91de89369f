package store

import (
	"fmt"
	"math"
	"strconv"
)

// DiskUsage measures the file system holding a path (statfs in production;
// tests inject their own).
type DiskUsage interface {
	// Usage returns the used fraction of the file system holding path
	// (Java UtilAll.getDiskPartitionSpaceUsedPercent: (total−free)/total)
	// and the bytes an unprivileged writer may still allocate there.
	Usage(path string) (used float64, avail int64, err error)
}

// StatfsUsage is the DiskUsage of the real file system.
type StatfsUsage struct{}

// errDispatchStalled refuses puts while the dispatcher waits for space.
var errDispatchStalled = fmt.Errorf("%w: consume queue or index writes are waiting for disk space", ErrDiskFull)

// diskState is what the last disk check found.
type diskState struct {
	used  float64 // used fraction, -1 unknown
	avail int64
}

// writeRefused returns the error a put gets while the store refuses writes,
// or nil: while the dispatcher is stalled (dispatch.go: ErrDiskFull, or
// ErrNotWritable after an I/O error), and
// while the last disk check found the disk over
// diskSpaceWarningLevelRatio or fewer free bytes than the dispatch reserve.
// A delivery (message.Message.Delivery) is refused over the ratio only when
// the free bytes are below the reserve too: delivering a pending delay or
// timer message is what lets cleanup delete the file it pins.
func (s *Store) writeRefused(delivery bool) error {
	if s.dispatchStalled.Load() {
		return s.stallRefusal()
	}
	if s.diskFull.Load() {
		d, r := s.disk.Load(), s.retention()
		if delivery && d != nil && d.avail >= r.DiskReserve {
			return nil
		}
		return fmt.Errorf("%w: %.2f of the disk used, %d bytes free (warning level %.2f, reserve %d bytes)",
			ErrDiskFull, d.used, d.avail, r.DiskSpaceWarningLevelRatio, r.DiskReserve)
	}
	return nil
}

// noteWritten counts bytes written since the last disk check and wakes the
// cleanup goroutine for a check once they reach a quarter of the reserve,
// so a burst cannot eat the reserve between two periodic checks.
func (s *Store) noteWritten(n int) {
	if s.sinceDiskCheck.Add(int64(n)) >= s.retention().DiskReserve/4 {
		select {
		case s.diskCheckWake <- struct{}{}:
		default:
		}
	}
}

// checkDisk measures the store's file system and sets or clears the
// disk-full refusal. It returns the used fraction (-1 when unknown).
func (s *Store) checkDisk() float64 {
	s.sinceDiskCheck.Store(0)
	r := s.retention()
	used, avail, err := r.DiskUsage.Usage(s.opts.commitLogPath())
	if err != nil {
		s.log.Warn().Err(err).Msg("disk usage unknown")
		return -1
	}
	s.disk.Store(&diskState{used: used, avail: avail})
	full := used > r.DiskSpaceWarningLevelRatio || avail < r.DiskReserve
	if was := s.diskFull.Swap(full); was != full {
		if full {
			s.stats.diskFullTimes.Add(1)
			s.log.Error().Float64("used", used).Int64("avail", avail).Msg("disk full: puts are refused until space is freed")
		} else {
			s.log.Warn().Float64("used", used).Int64("avail", avail).Msg("disk space OK again: puts accepted")
		}
	}
	return used
}

// DiskStatus reports the last measured used fraction of the store's file
// system (-1 unknown) and whether puts are refused for want of space.
func (s *Store) DiskStatus() (used float64, full bool) {
	d := s.disk.Load()
	if d == nil {
		return -1, s.stalledOnFullDisk()
	}
	return d.used, s.diskFull.Load() || s.stalledOnFullDisk()
}

// DiskUtil is the text of Java SendMessageProcessor.diskUtil:
// "CL: %5.2f CQ: %5.2f INDEX: %5.2f" (one file system holds all three here).
func (s *Store) DiskUtil() string {
	used, _ := s.DiskStatus()
	if used < 0 {
		used = -1
	}
	return fmt.Sprintf("CL: %5.2f CQ: %5.2f INDEX: %5.2f", used, used, used)
}

func formatRatio(v float64) string {
	if v < 0 || math.IsNaN(v) {
		return "-1"
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}
