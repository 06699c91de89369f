package topicgroup

import "testing"

// PermString is PermName.perm2String: one letter per bit, '-' where unset,
// and the priority bit not shown.
func TestPermString(t *testing.T) {
	for perm, want := range map[int32]string{
		0:                                  "---",
		PermRead:                           "R--",
		PermWrite:                          "-W-",
		PermInherit:                        "--X",
		PermRead | PermWrite:               "RW-",
		PermRead | PermWrite | PermInherit: "RWX",
		PermPriority | PermRead:            "R--",
	} {
		if got := PermString(perm); got != want {
			t.Errorf("PermString(%d) = %q, want %q", perm, got, want)
		}
	}
}
