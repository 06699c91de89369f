package broker

import (
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/rmqio/rmq/remoting"
)

// binaryExt encodes pairs as a binary extFields area (keys may repeat).
func binaryExt(pairs [][2]string) string {
	var b []byte
	for _, p := range pairs {
		b = binary.BigEndian.AppendUint16(b, uint16(len(p[0])))
		b = append(b, p[0]...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(p[1])))
		b = append(b, p[1]...)
	}
	return string(b)
}

// A header of the stock clients is read in one pass.
func TestReadSendHeaderV2StockHeader(t *testing.T) {
	raw := binaryExt([][2]string{
		{"a", "PG"}, {"b", "TopicTest"}, {"c", "TBW102"}, {"d", "4"}, {"e", "3"}, {"f", "0"},
		{"g", "1700000000123"}, {"h", "0"}, {"i", "KEYS\x01k\x02WAIT\x01true\x02"}, {"j", "2"},
		{"k", "false"}, {"l", "16"}, {"m", "TRUE"}, {"n", "broker-a"},
	})
	got := readSendHeaderV2(raw)
	want := &sendHeader{
		producerGroup: "PG", topic: "TopicTest", defaultTopic: "TBW102", defaultTopicQueueNums: 4, queueID: 3,
		bornTimestamp: 1700000000123, properties: "KEYS\x01k\x02WAIT\x01true\x02", reconsumeTimes: 2,
		maxReconsumeTimes: 16, hasMaxReconsumeTimes: true, batch: true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// Whatever the one-pass reader accepts, it reads as the map path does; and
// a well-formed header without repeated letters it never refuses.
func TestReadSendHeaderV2AgreesWithMapPath(t *testing.T) {
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "aa", ""}
	vals := []string{"", "0", "7", "-3", "2147483647", "2147483648", "-2147483649", "9223372036854775807",
		"x", "1e3", " 1", "+1", "true", "TRUE", "tru", "false", "T\x01v\x02"}
	r := rand.New(rand.NewPCG(1, 2))
	accepted := 0
	for range 50000 {
		var pairs [][2]string
		// Mostly complete headers, so that both outcomes are common.
		for _, k := range keys[:8] {
			if r.IntN(12) > 0 {
				v := vals[1+r.IntN(3)]
				if r.IntN(10) == 0 {
					v = vals[r.IntN(len(vals))]
				}
				pairs = append(pairs, [2]string{k, v})
			}
		}
		for range r.IntN(5) {
			pairs = append(pairs, [2]string{keys[r.IntN(len(keys))], vals[r.IntN(len(vals))]})
		}
		r.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
		raw := binaryExt(pairs)
		m := map[string]string{}
		remoting.EachExtField(raw, func(k, v string) { m[k] = v })
		one := readSendHeaderV2(raw)
		viaMap := readSendHeader(m, v2Letters)
		if one != nil {
			accepted++
			if !reflect.DeepEqual(one, viaMap) {
				t.Fatalf("pairs %q:\none pass %+v\nmap      %+v", pairs, one, viaMap)
			}
			continue
		}
		if viaMap != nil && len(m) == len(pairs) {
			t.Fatalf("pairs %q: refused by the one-pass reader, read by the map path as %+v", pairs, viaMap)
		}
	}
	if accepted < 5000 {
		t.Fatalf("only %d of 50000 headers accepted: the generator does not exercise the reader", accepted)
	}
}
