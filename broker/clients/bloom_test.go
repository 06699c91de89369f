package clients

import (
	"slices"
	"testing"
)

// TestBloomMatchesJava holds bloomGenerate to rocketmq-filter's
// BloomFilter.createByFn(20, 32).generate(s), printed by the Java class.
func TestBloomMatchesJava(t *testing.T) {
	k, m := bloomShape(bloomErrorRate, bloomExpectedNum)
	if k != 3 || m != 112 {
		t.Fatalf("bloomShape = k %d m %d, Java says k 3 m 112", k, m)
	}
	for _, c := range []struct {
		s    string
		want []int32
	}{
		{"g#t", []int32{22, 87, 58}},
		{"cg_sql#TopicA", []int32{41, 63, 56}},
		{"", []int32{0, 0, 0}},
		{"日本語#x", []int32{54, 3, 61}},
		{"abcdefghijklmnopq#0123456789", []int32{21, 87, 59}},
	} {
		d := bloomGenerate(c.s, k, m)
		if d.BitNum != 112 || !slices.Equal(d.BitPos, c.want) {
			t.Errorf("generate(%q) = %v/%d, Java %v/112", c.s, d.BitPos, d.BitNum, c.want)
		}
		if !bloomValid(&d, k, m) {
			t.Errorf("generate(%q) not valid", c.s)
		}
	}
}
