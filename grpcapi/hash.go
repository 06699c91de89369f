package grpcapi

import "github.com/rmqio/rmq/message"

// MessageGroupQueue is the queue in [0, queues) a FIFO message of group goes
// to: Guava's consistent hash of the group's Java hashCode, as the proxy's
// SendMessageQueueSelector picks it.
func MessageGroupQueue(group string, queues int) int {
	return consistentHash(int64(message.HashAppend(0, group)), queues)
}

// consistentHash is Guava's Hashing.consistentHash(long, int): the bucket
// in [0, buckets) of input, moving as few inputs as possible when buckets
// grows. The proxy picks a FIFO message's queue with it.
func consistentHash(input int64, buckets int) int {
	state := uint64(input)
	next := func() float64 {
		state = 2862933555777941757*state + 1
		return float64(int32(state>>33)+1) / float64(1<<31)
	}
	candidate := 0
	for {
		n := int(float64(candidate+1) / next())
		if n >= 0 && n < buckets {
			candidate = n
		} else {
			return candidate
		}
	}
}
