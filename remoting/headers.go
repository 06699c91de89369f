package remoting

// Typed custom headers. Every request code rmq serves or sends has its
// header decoded here from the command's extFields, once, with the field
// names and Java types of 4.9.8's *RequestHeader classes
// (common/.../protocol/header/): a @CFNotNull field that is absent, or a
// number Java's Integer/Long.parseLong would refuse, makes the decode fail
// with the text the stock RemotingCommandException carries, and
// ErrorResponse turns that into the stock SYSTEM_ERROR reply. (The stock
// reflective decode only logs that exception and leaves the field null, so
// the processor then fails on it, or the FastCodesHeader decode of the hot
// codes throws it: a SYSTEM_ERROR either way. A few @CFNotNull fields whose
// absence the stock processors tolerate, such as reset offset's primitive
// isForce, are optional here.) Processors
// read struct fields and never name an extFields key themselves
// (internal/archtest TestNoLiteralHeaderReads keeps it so).
//
// The field order of each decode method is the order the fields are
// checked in, which decides the remark when several are missing: it is the
// order rmq has always checked them in.

// headerDecoder is implemented by the pointer of every typed header; the
// method is unexported so that headers can only be defined in this package,
// next to one another.
type headerDecoder[T any] interface {
	*T
	decodeHeader(h *Header)
}

// fastHeaderDecoder is a typed header that decodes itself without the
// generic path's allocations (the header and its reader escape through the
// call of decodeHeader on a type parameter): the send-path headers
// (headers_send.go), decoded on the event loop for every message. The
// method is called on a nil receiver and returns the header by value.
type fastHeaderDecoder[T any] interface {
	decodeFast(c *Command) (T, error)
}

// DecodeHeader decodes c's custom header fields into a T. The error is the
// first field that is missing or does not parse; answer it with
// ErrorResponse (SYSTEM_ERROR and the stock remark).
func DecodeHeader[T any, P headerDecoder[T]](c *Command) (T, error) {
	if f, ok := any(P(nil)).(fastHeaderDecoder[T]); ok {
		return f.decodeFast(c)
	}
	var v T
	h := c.Header()
	P(&v).decodeHeader(h)
	return v, h.Err()
}

// OptStr returns a string field that may be absent: nil when it is (Java's
// null), which some handlers tell apart from an empty value.
func (h *Header) OptStr(key string) *string {
	v, ok := h.ext[key]
	if !ok {
		return nil
	}
	return &v
}

// OptInt64 returns a nullable Long field: nil when absent or empty, the
// number otherwise (a number that does not parse records the error).
func (h *Header) OptInt64(key string) *int64 {
	if v, ok := h.ext[key]; !ok || v == "" {
		return nil
	}
	n := h.Int64(key, false, 0)
	return &n
}
