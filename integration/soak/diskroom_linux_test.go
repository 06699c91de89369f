//go:build linux

package soak

import (
	"syscall"
	"testing"
)

// maxSoakDiskUse is the highest use of the work directory's file system a
// failover soak starts with. Java 5.3.3 brokers delete commitlog files at
// once above diskMaxUsedSpaceRatio (75) and, whatever is configured, above
// 85 % (DefaultMessageStore.CleanCommitLogService); in controller mode they
// then drop the epoch entries those files held (truncateEpochFilePrefix),
// and a restarted replica finds no consistent point with the master
// ("Failed to find a consistent point") and never rejoins: the baseline
// stops at its second kill, for a full disk rather than anything it is
// measured on. rmq cleans by the same ratios.
const maxSoakDiskUse = 0.70

// checkDiskRoom stops the soak before it starts on a file system that
// would put the brokers into clean-at-once mode.
func checkDiskRoom(t *testing.T, dir string) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Blocks == 0 {
		t.Logf("soak: cannot read the file system of %s: %v", dir, err)
		return
	}
	// As Java's UtilAll.getDiskPartitionSpaceUsedPercent (and df): used
	// over used plus what an unprivileged writer may still take.
	usedBlocks := float64(st.Blocks - st.Bfree)
	used := usedBlocks / (usedBlocks + float64(st.Bavail))
	if used > maxSoakDiskUse {
		t.Fatalf("soak: the file system of %s is %.0f%% used; brokers clean their commitlogs at once above 75%% (Java: and lose "+
			"the epoch history a restarted replica needs): free space or point SOAK_FO_KEEP (or TMPDIR) at a file system under %.0f%%",
			dir, 100*used, 100*maxSoakDiskUse)
	}
}
