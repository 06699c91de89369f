package clients

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// The bloom-filter data the stock broker keeps with each consumer filter
// (rocketmq-filter BloomFilter, BloomFilterData). rmq computes no bit maps at
// dispatch (enableCalcFilterBitMap is off by default on the stock broker too),
// but consumerFilter.json carries the data so that a Java broker reading the
// file accepts it: it ignores the whole file when an entry's data does not fit
// its filter.

// Stock BrokerConfig defaults: maxErrorRateOfBloomFilter, expectConsumerNumUseFilter.
const (
	bloomErrorRate   = 20
	bloomExpectedNum = 32
)

// bloomFilterData is BloomFilterData as fastjson writes it.
type bloomFilterData struct {
	BitNum int     `json:"bitNum"`
	BitPos []int32 `json:"bitPos"`
}

// bloomShape is BloomFilter's k (hash functions) and m (bits) for an error
// rate of f percent and n expected entries.
func bloomShape(f, n int) (k, m int) {
	errorRate := float64(f) / 100
	k = int(math.Ceil(math.Log(errorRate) / math.Log(0.5)))
	m = int(math.Ceil(float64(n) * (math.Log(1/errorRate) / math.Log(2)) * (math.Log(math.E) / math.Log(2))))
	m = int(8 * math.Ceil(float64(m)/8))
	return k, m
}

// BloomBits is the bit count (m) of the stock BloomFilter.createByFn(f, n)
// for an error rate of f percent and n expected entries, and false where
// createByFn refuses the arguments (f outside [1, 100), n below 1).
func BloomBits(f, n int) (int, bool) {
	if f < 1 || f >= 100 || n < 1 {
		return 0, false
	}
	_, m := bloomShape(f, n)
	return m, true
}

// bloomGenerate is BloomFilter.generate(str) (calcBitPositions): Guava's
// murmur3_128 of the UTF-8 text, asLong, split into two int hashes.
func bloomGenerate(str string, k, m int) bloomFilterData {
	h1, _ := murmur3x64128([]byte(str))
	hash1, hash2 := int32(h1), int32(h1>>32)
	pos := make([]int32, k)
	for i := 1; i <= k; i++ {
		c := hash1 + int32(i)*hash2
		if c < 0 {
			c = ^c
		}
		pos[i-1] = c % int32(m)
	}
	return bloomFilterData{BitNum: m, BitPos: pos}
}

// bloomValid is BloomFilter.isValid.
func bloomValid(d *bloomFilterData, k, m int) bool {
	return d != nil && d.BitNum == m && len(d.BitPos) == k
}

// murmur3x64128 is MurmurHash3_x64_128 with seed 0 (Guava murmur3_128); h1
// is what Guava's HashCode.asLong returns.
func murmur3x64128(data []byte) (h1, h2 uint64) {
	const c1, c2 = 0x87c37b91114253d5, 0x4cf5ad432745937f
	n := len(data)
	for len(data) >= 16 {
		k1 := binary.LittleEndian.Uint64(data)
		k2 := binary.LittleEndian.Uint64(data[8:])
		data = data[16:]
		k1 *= c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= c2
		h1 ^= k1
		h1 = bits.RotateLeft64(h1, 27)
		h1 += h2
		h1 = h1*5 + 0x52dce729
		k2 *= c2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= c1
		h2 ^= k2
		h2 = bits.RotateLeft64(h2, 31)
		h2 += h1
		h2 = h2*5 + 0x38495ab5
	}
	var k1, k2 uint64
	for i := len(data) - 1; i >= 8; i-- {
		k2 ^= uint64(data[i]) << (8 * (i - 8))
	}
	for i := min(len(data), 8) - 1; i >= 0; i-- {
		k1 ^= uint64(data[i]) << (8 * i)
	}
	if len(data) > 8 {
		k2 *= c2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= c1
		h2 ^= k2
	}
	if len(data) > 0 {
		k1 *= c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= c2
		h1 ^= k1
	}
	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1, h2 = fmix64(h1), fmix64(h2)
	h1 += h2
	h2 += h1
	return h1, h2
}

func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}
