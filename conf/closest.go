package conf

import "strings"

// Closest returns the key of known nearest to key (case-insensitive edit
// distance), for a "did you mean" hint after a typo such as listenPot, or ""
// when nothing is near: at most a third of the key's length may differ, so
// that a key of its own (an rmq key a stock file lacks) is not matched to
// an unrelated one.
func Closest(key string, known []string) string {
	lk := strings.ToLower(key)
	best, bestD := "", len(lk)/3+1
	for _, k := range known {
		if d := EditDistance(lk, strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// EditDistance is the Levenshtein distance of a and b (bytes): the
// "did you mean" hints of config keys (Closest) and of rmq's commands.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
