package remoting

import (
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
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
	var got SendMessageRequestHeaderV2
	if !got.decodeRaw(raw) {
		t.Fatal("stock header refused")
	}
	want := SendMessageRequestHeaderV2{
		ProducerGroup: "PG", Topic: "TopicTest", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: 3,
		BornTimestamp: 1700000000123, Properties: "KEYS\x01k\x02WAIT\x01true\x02", ReconsumeTimes: 2,
		MaxReconsumeTimes: 16, HasMaxReconsumeTimes: true, Batch: true,
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
		EachExtField(raw, func(k, v string) { m[k] = v })
		var one, viaMap SendMessageRequestHeaderV2
		ok := one.decodeRaw(raw)
		h := Header{ext: m}
		viaMap.decodeHeader(&h)
		if ok {
			accepted++
			if h.err != nil || one != viaMap {
				t.Fatalf("pairs %q:\none pass %+v\nmap      %+v (%v)", pairs, one, viaMap, h.err)
			}
			continue
		}
		if h.err == nil && len(m) == len(pairs) {
			t.Fatalf("pairs %q: refused by the one-pass reader, read by the map path as %+v", pairs, viaMap)
		}
	}
	if accepted < 5000 {
		t.Fatalf("only %d of 50000 headers accepted: the generator does not exercise the reader", accepted)
	}
}

// The V2 letters read in place must mean what the V1 names mean.
func TestV2LettersMatchV1Names(t *testing.T) {
	long := map[string]string{}
	for _, k := range sendV2Keys {
		long[k.short] = k.long
	}
	pairs := []struct{ v1, v2 string }{
		{sendV1Names.producerGroup, sendV2Letters.producerGroup}, {sendV1Names.topic, sendV2Letters.topic},
		{sendV1Names.defaultTopic, sendV2Letters.defaultTopic}, {sendV1Names.defaultTopicQueueNums, sendV2Letters.defaultTopicQueueNums},
		{sendV1Names.queueID, sendV2Letters.queueID}, {sendV1Names.sysFlag, sendV2Letters.sysFlag},
		{sendV1Names.bornTimestamp, sendV2Letters.bornTimestamp}, {sendV1Names.flag, sendV2Letters.flag},
		{sendV1Names.properties, sendV2Letters.properties}, {sendV1Names.reconsumeTimes, sendV2Letters.reconsumeTimes},
		{sendV1Names.unitMode, sendV2Letters.unitMode}, {sendV1Names.batch, sendV2Letters.batch},
		{sendV1Names.maxReconsumeTimes, sendV2Letters.maxReconsumeTimes},
	}
	for _, p := range pairs {
		if long[p.v2] != p.v1 {
			t.Errorf("letter %q reads as %q, but SendMessageRequestHeaderV2 maps it to %q", p.v2, p.v1, long[p.v2])
		}
	}
}

// sendHeaderCommands are a SEND_MESSAGE_V2 as a binary header whose fields
// are left unparsed (RawExtCodes) and the same as a map, and a SEND_MESSAGE.
func sendHeaderCommands(t testing.TB) (raw, mapped, v1 *Command) {
	mapped = benchCommand(SerializeRocketMQ)
	raw, err := decodeFrame(EncodeFrame(mapped)[4:], func(int32) bool { return true }, false)
	if err != nil {
		t.Fatal(err)
	}
	v1 = &Command{Code: SendMessage, ExtFields: map[string]string{}}
	for _, k := range sendV2Keys {
		if v, ok := mapped.ExtFields[k.short]; ok {
			v1.ExtFields[k.long] = v
		}
	}
	return raw, mapped, v1
}

// The send headers are decoded on the event loop for every message: the
// decode itself allocates nothing, whichever form the fields come in.
func TestDecodeSendHeaderDoesNotAllocate(t *testing.T) {
	raw, mapped, v1 := sendHeaderCommands(t)
	for name, c := range map[string]*Command{"raw": raw, "map": mapped} {
		if n := testing.AllocsPerRun(100, func() {
			if h, err := DecodeHeader[SendMessageRequestHeaderV2](c); err != nil || h.Topic != "TopicTest" {
				t.Fatal(h, err)
			}
		}); n != 0 {
			t.Errorf("V2 %s: %.1f allocations per decode", name, n)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		if h, err := DecodeHeader[SendMessageRequestHeader](v1); err != nil || h.Topic != "TopicTest" {
			t.Fatal(h, err)
		}
	}); n != 0 {
		t.Errorf("V1: %.1f allocations per decode", n)
	}
}

// A V2 header that fails is reported with the V1 name of the field, in
// either form; V1 and V2 read the same header alike.
func TestDecodeSendHeaderV2ReportsV1Names(t *testing.T) {
	raw, mapped, v1 := sendHeaderCommands(t)
	a, errA := DecodeHeader[SendMessageRequestHeaderV2](raw)
	b, errB := DecodeHeader[SendMessageRequestHeaderV2](mapped)
	c, errC := DecodeHeader[SendMessageRequestHeader](v1)
	if errA != nil || errB != nil || errC != nil || a != b || SendMessageRequestHeader(a) != c {
		t.Fatalf("raw %+v %v\nmap %+v %v\nv1 %+v %v", a, errA, b, errB, c, errC)
	}
	delete(mapped.ExtFields, "b")
	mapped.ExtFields["g"] = "soon"
	if _, err := DecodeHeader[SendMessageRequestHeaderV2](mapped); err == nil || err.Error() != missingFieldError("topic").Error() {
		t.Fatalf("missing b: %v, want %v", err, missingFieldError("topic"))
	}
	delete(mapped.ExtFields, "g")
	if _, err := DecodeHeader[SendMessageRequestHeaderV2](mapped); err == nil || err.Error() != missingFieldError("topic").Error() {
		t.Fatalf("missing b: %v", err)
	}
	mapped.ExtFields["b"] = "T"
	mapped.ExtFields["d"] = "x"
	if _, err := DecodeHeader[SendMessageRequestHeaderV2](mapped); err == nil || !strings.Contains(err.Error(), "<defaultTopicQueueNums>") {
		t.Fatalf("bad d: %v", err)
	}
}
