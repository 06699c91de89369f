package broker

import "slices"

// ServedCodes lists the request codes the broker has a handler for, in
// ascending order: its dispatch table, which docs/compatibility.md is
// generated from. Every other code gets REQUEST_CODE_NOT_SUPPORTED.
func (b *Broker) ServedCodes() []int32 {
	codes := make([]int32, 0, len(b.handlers))
	for code := range b.handlers {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	return codes
}
