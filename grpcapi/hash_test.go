package grpcapi

import (
	"testing"

	"github.com/rmqio/rmq/message"
)

// Values from Java: String.hashCode and Guava 32's
// Hashing.consistentHash(hashCode, buckets) for buckets 1, 2, 3, 4, 8, 16, 100.
func TestFIFOQueueSelectionMatchesJava(t *testing.T) {
	buckets := []int{1, 2, 3, 4, 8, 16, 100}
	cases := []struct {
		group string
		hash  int32
		want  []int
	}{
		{"orderGroup1", 1285102208, []int{0, 0, 2, 2, 6, 9, 9}},
		{"group-1", 293427299, []int{0, 1, 1, 1, 7, 15, 36}},
		{"", 0, []int{0, 0, 0, 0, 0, 0, 0}},
		{"a", 97, []int{0, 0, 0, 0, 0, 0, 29}},
		{"中文组", 20070666, []int{0, 0, 0, 0, 7, 7, 52}},
		{"\U0001F600x", 54959989, []int{0, 1, 2, 3, 5, 5, 27}},
		{"some-long-message-group-name-0123456789", 1190282715, []int{0, 1, 2, 3, 3, 11, 86}},
	}
	for _, c := range cases {
		if h := message.HashAppend(0, c.group); h != c.hash {
			t.Errorf("hash(%q) = %d, want %d", c.group, h, c.hash)
		}
		for i, n := range buckets {
			if got := consistentHash(int64(c.hash), n); got != c.want[i] {
				t.Errorf("consistentHash(%d, %d) = %d, want %d", c.hash, n, got, c.want[i])
			}
		}
	}
}
