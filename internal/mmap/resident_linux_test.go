package mmap

import (
	"testing"

	"golang.org/x/sys/unix"
)

// sink keeps a test's read of a mapped byte from being optimised away.
var sink byte

// TestResidentFollowsThePageCache checks Resident against the page cache:
// an unwritten sparse page is not resident, a written one is (also after
// Release, which only unmaps it), one evicted with fadvise is not until it
// is read again, and any page of a range that is not resident makes the
// whole range not resident, whatever its alignment.
func TestResidentFollowsThePageCache(t *testing.T) {
	page := PageSize
	f, b := mapNewFile(t, 8*page)
	defer Unmap(b)
	if Resident(b[page+10 : 2*page]) {
		t.Fatal("a page never written reads as resident")
	}
	if !Resident(nil) || !Resident(b[3:3]) {
		t.Fatal("an empty range reads as not resident")
	}
	for i := range b {
		b[i] = byte(i)
	}
	for _, r := range [][2]int64{{0, 8 * page}, {10, 20}, {page - 1, page + 1}, {7*page + 100, 8 * page}} {
		if !Resident(b[r[0]:r[1]]) {
			t.Fatalf("written range [%d, %d) reads as not resident", r[0], r[1])
		}
	}
	if err := Release(b); err != nil {
		t.Fatal(err)
	}
	if !Resident(b) {
		t.Fatal("pages Release dropped from the mapping read as not resident; they are still cached")
	}

	var fs unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC {
		t.Skip("tmpfs pages cannot be evicted; the rest needs a disk-backed directory")
	}
	if err := Sync(f, b); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 8*page, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	if Resident(b[3*page+5 : 3*page+6]) {
		t.Fatal("an evicted page reads as resident")
	}
	// Page 3 alone back in, from the disk: MADV_RANDOM turns off the fault's
	// read-around, which would bring its neighbours in too.
	if err := unix.Madvise(b, unix.MADV_RANDOM); err != nil {
		t.Fatal(err)
	}
	sink = b[3*page+5]
	if !Resident(b[3*page : 4*page]) {
		t.Fatal("a page read back reads as not resident")
	}
	if Resident(b[3*page+5 : 4*page+1]) {
		t.Fatal("a range ending in an evicted page reads as resident")
	}
	if Resident(b[2*page+page-1 : 3*page+1]) {
		t.Fatal("a range starting in an evicted page reads as resident")
	}
}

// TestResidentBoundsItsRange checks that a range longer than
// maxResidentPages pages reads as not resident even when it is cached, and
// one of exactly maxResidentPages pages is looked at whole.
func TestResidentBoundsItsRange(t *testing.T) {
	page := PageSize
	_, b := mapNewFile(t, (maxResidentPages+1)*page)
	defer Unmap(b)
	for i := range b {
		b[i] = 1
	}
	if Resident(b) {
		t.Error("a range of more than maxResidentPages pages reads as resident")
	}
	if !Resident(b[page:]) {
		t.Error("a cached range of maxResidentPages pages reads as not resident")
	}
	if Resident(b[page-1:]) {
		t.Error("an unaligned range over maxResidentPages+1 pages reads as resident")
	}
}
