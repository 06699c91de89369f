package testutil

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// MappedRSS returns the resident kilobytes /proc/self/smaps reports for the
// mapping that starts at b's first byte. It skips the test where there is
// no smaps (any system but Linux).
func MappedRSS(t testing.TB, b []byte) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(&b[0])))
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		l := sc.Text()
		// A mapping's header is "start-end perms ..."; its fields are "Key: value".
		if f := strings.Fields(l); len(f) > 0 && !strings.HasSuffix(f[0], ":") {
			in = strings.HasPrefix(l, start)
			continue
		}
		if in && strings.HasPrefix(l, "Rss:") {
			n, err := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("testutil: no mapping at %s in smaps", start)
	return 0
}
