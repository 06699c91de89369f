//go:build unix

package brokeradmin

import "syscall"

func diskSpace(path string) (total, free uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, 0, err
	}
	// Java's File.getFreeSpace is f_bfree (blocks reserved for root count as
	// free), so the used ratio matches the Java broker's on the same disk.
	bs := uint64(st.Bsize)
	return st.Blocks * bs, st.Bfree * bs, nil
}
