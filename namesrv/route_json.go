package namesrv

import (
	"bytes"
	"maps"
	"slices"
	"strconv"

	"rmq/remoting"
)

// versionV4_9_4 is MQVersion.Version.V4_9_4.ordinal(): from this client version
// on, and whenever acceptStandardJsonOnly=true, the Java name server writes the
// route with BrowserCompatible, i.e. brokerAddrs keys as quoted strings.
const versionV4_9_4 = 401

// encodeRoute writes a TopicRouteData compactly, fields in fastjson's
// alphabetical order, brokerAddrs always an object and queueDatas always an
// array. standard=false writes brokerAddrs keys bare ({0:"ip:port"}), which is
// what the Java name server sends to clients older than 4.9.4; the Go client's
// hand-rolled brokerAddrs parser strips quotes and accepts both.
func encodeRoute(rd *remoting.TopicRouteData, standard bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"brokerDatas":[`)
	for i, bd := range rd.BrokerDatas {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"brokerAddrs":{`)
		for j, id := range slices.Sorted(maps.Keys(bd.BrokerAddrs)) {
			if j > 0 {
				b.WriteByte(',')
			}
			key := strconv.FormatInt(id, 10)
			if standard {
				b.WriteByte('"')
				b.WriteString(key)
				b.WriteByte('"')
			} else {
				b.WriteString(key)
			}
			b.WriteByte(':')
			b.Write(remoting.MarshalBody(bd.BrokerAddrs[id]))
		}
		b.WriteString(`},"brokerName":`)
		b.Write(remoting.MarshalBody(bd.BrokerName))
		b.WriteString(`,"cluster":`)
		b.Write(remoting.MarshalBody(bd.Cluster))
		b.WriteByte('}')
	}
	b.WriteString(`],"filterServerTable":`)
	fst := rd.FilterServerTable
	if fst == nil {
		fst = map[string][]string{}
	}
	b.Write(remoting.MarshalBody(fst))
	if rd.OrderTopicConf != "" {
		b.WriteString(`,"orderTopicConf":`)
		b.Write(remoting.MarshalBody(rd.OrderTopicConf))
	}
	b.WriteString(`,"queueDatas":`)
	qds := rd.QueueDatas
	if qds == nil {
		qds = []*remoting.QueueData{}
	}
	b.Write(remoting.MarshalBody(qds))
	b.WriteByte('}')
	return b.Bytes()
}

// unmarshalLenient decodes JSON a Java peer wrote with fastjson defaults, whose
// non-string map keys come out bare ({0:"a"}); such keys are quoted first.
func unmarshalLenient(b []byte, v any) error {
	err := remoting.UnmarshalBody(b, v)
	if err == nil {
		return nil
	}
	q, changed := quoteBareKeys(b)
	if !changed {
		return err
	}
	return remoting.UnmarshalBody(q, v)
}

// quoteBareKeys rewrites bare numeric object keys as JSON strings, leaving
// string contents untouched. It reports whether anything changed.
func quoteBareKeys(b []byte) ([]byte, bool) {
	out := make([]byte, 0, len(b)+16)
	var stack []byte // open containers: '{' or '['
	expectKey := false
	changed := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(b) {
				return append(out, b[i:]...), changed
			}
			out = append(out, b[i:j+1]...)
			i = j
			expectKey = false
		case c == '{' || c == '[':
			stack = append(stack, c)
			expectKey = c == '{'
			out = append(out, c)
		case c == '}' || c == ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expectKey = false
			out = append(out, c)
		case c == ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1] == '{'
			out = append(out, c)
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			out = append(out, c)
		case expectKey && (c == '-' || (c >= '0' && c <= '9')):
			j := i + 1
			for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
				j++
			}
			out = append(out, '"')
			out = append(out, b[i:j]...)
			out = append(out, '"')
			i = j - 1
			expectKey = false
			changed = true
		default:
			expectKey = false
			out = append(out, c)
		}
	}
	return out, changed
}
