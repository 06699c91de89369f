package brokeradmin

import "golang.org/x/sys/windows"

// diskSpace returns the size and the free bytes of the volume holding path
// (GetDiskFreeSpaceEx; free counts every free byte, as Java's
// File.getFreeSpace does, not only those available to this user).
func diskSpace(path string) (total, free uint64, err error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return 0, 0, err
	}
	var avail uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
		return 0, 0, err
	}
	return total, free, nil
}
