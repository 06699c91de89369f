//go:build unix

package metrics

import "golang.org/x/sys/unix"

// fsUsedBytes is total minus free space of the file system holding dir, as
// 5.x rocketmq_storage_size reads it (File.getTotalSpace - getFreeSpace).
func fsUsedBytes(dir string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Blocks == 0 {
		return 0, false
	}
	return int64(st.Blocks-st.Bfree) * int64(st.Bsize), true
}
