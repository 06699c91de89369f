package timer

import "container/heap"

// slotHeap is a min-heap of slot times.
type slotHeap []int64

func (h slotHeap) Len() int           { return len(h) }
func (h slotHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h slotHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *slotHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *slotHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (h *slotHeap) push(t int64) { heap.Push(h, t) }

// min returns the smallest time at or after floor, dropping smaller ones.
func (h *slotHeap) min(floor int64) (int64, bool) {
	for h.Len() > 0 {
		if (*h)[0] >= floor {
			return (*h)[0], true
		}
		heap.Pop(h)
	}
	return 0, false
}
