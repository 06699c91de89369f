package remoting

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
)

// Command is one RemotingCommand: a request, a response, or a oneway request.
// Body is owned by the command; decoders copy it out of the network buffer.
// A server lends the Body of the requests named in ServerOptions.LentBodyCodes
// to their handler only (lend.go).
type Command struct {
	Code          int32
	Language      string // enum name, e.g. "JAVA", "GO"
	Version       int32
	Opaque        int32
	Flag          int32
	Remark        string
	ExtFields     map[string]string
	Body          []byte
	SerializeType byte // JSON or ROCKETMQ; responses are written in this type

	// rawExt is the binary extFields area of a request decoded with its
	// fields left unparsed (ServerOptions.RawExtCodes), already checked to
	// be well formed; ExtFields stays nil until Ext builds it.
	rawExt    string
	hasRawExt bool

	// onWritten runs once the frame has been copied out (OnWritten).
	onWritten func()
	// lent is the pooled buffer of Body, lent to the handler (lend.go).
	lent *[]byte
}

// OnWritten makes f run once, when the server has copied the command's frame
// out for the socket (or found the connection closed): a response whose
// Body is a borrowed buffer gives it back there. A response the server never
// writes (a oneway request's, or one a handler's caller consumes itself)
// never runs f, and its buffer is collected as usual.
func (c *Command) OnWritten(f func()) { c.onWritten = f }

// written runs and clears the OnWritten function.
func (c *Command) written() {
	if f := c.onWritten; f != nil {
		c.onWritten = nil
		f()
	}
}

// Ext returns the custom header fields, building the map from the unparsed
// binary area on first use.
func (c *Command) Ext() map[string]string {
	if c.hasRawExt && c.ExtFields == nil {
		m := make(map[string]string, countBinaryFields(c.rawExt))
		eachBinaryField(c.rawExt, func(k, v string) { m[k] = v })
		c.ExtFields = m
	}
	return c.ExtFields
}

// RawExt returns the unparsed binary extFields area of a request decoded
// with ServerOptions.RawExtCodes, for readers that want a field or two
// without a map; ok is false for every other command. The area holds
// big-endian pairs (2-byte key length, key, 4-byte value length, value);
// EachExtField walks it.
func (c *Command) RawExt() (raw string, ok bool) { return c.rawExt, c.hasRawExt }

// EachExtField calls fn for every pair of an area returned by RawExt, in
// wire order (a repeated key comes twice; the map of Ext keeps the last).
func EachExtField(raw string, fn func(k, v string)) { eachBinaryField(raw, fn) }

var opaqueSeq atomic.Int32

// NextOpaque returns a fresh request id for requests this process originates.
func NextOpaque() int32 { return opaqueSeq.Add(1) }

// NewRequest builds a request with a fresh opaque.
func NewRequest(code int32, ext map[string]string, body []byte) *Command {
	return &Command{Code: code, Language: "GO", Version: Version, Opaque: NextOpaque(), ExtFields: ext, Body: body}
}

// NewResponse builds a response to req: same opaque and serialize type, response flag set.
func NewResponse(req *Command, code int32, remark string) *Command {
	return &Command{
		Code: code, Language: "GO", Version: Version, Opaque: req.Opaque,
		Flag: FlagResponse, Remark: remark, SerializeType: req.SerializeType,
	}
}

// ErrorResponse answers req with SYSTEM_ERROR and err's text as the remark:
// the stock reply to a request whose header or body cannot be used.
func ErrorResponse(req *Command, err error) *Command {
	return NewResponse(req, SystemError, err.Error())
}

// IsResponse reports whether the response bit is set.
func (c *Command) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether the oneway bit is set (Go clients never set it).
func (c *Command) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// SetExt sets one custom header field, creating the map when needed.
func (c *Command) SetExt(key, value string) {
	if c.Ext() == nil {
		c.ExtFields = make(map[string]string, 4)
	}
	c.ExtFields[key] = value
}

// SetExtInt sets an integer custom header field.
func (c *Command) SetExtInt(key string, v int64) { c.SetExt(key, strconv.FormatInt(v, 10)) }

func (c *Command) String() string {
	return fmt.Sprintf("code=%d opaque=%d flag=%d remark=%q ext=%v body=%dB", c.Code, c.Opaque, c.Flag, c.Remark, c.Ext(), len(c.Body))
}

// ErrMissingField is returned (wrapped) when a required header field is absent.
var ErrMissingField = errors.New("remoting: the custom field is null")

// missingFieldError reads exactly as Java's RemotingCommandException for a
// null @CFNotNull field, which is what the stock reply's remark carries.
type missingFieldError string

func (e missingFieldError) Error() string        { return "the custom field <" + string(e) + "> is null" }
func (e missingFieldError) Is(target error) bool { return target == ErrMissingField }

// Header reads typed custom header fields the way Java's decodeCommandCustomHeader
// does: required fields that are absent, and numbers that do not parse, record the
// first error, which Err returns (the stock reply is SYSTEM_ERROR with that text).
type Header struct {
	ext map[string]string
	err error
}

// Header returns a reader over the command's custom header fields.
func (c *Command) Header() *Header { return &Header{ext: c.Ext()} }

// Err returns the first decode error.
func (h *Header) Err() error { return h.err }

func (h *Header) get(key string, required bool) (string, bool) {
	v, ok := h.ext[key]
	if !ok && required && h.err == nil {
		h.err = missingFieldError(key)
	}
	return v, ok
}

// Str returns a string field.
func (h *Header) Str(key string, required bool) string {
	v, _ := h.get(key, required)
	return v
}

// Int64 returns an integer field, or def when absent.
func (h *Header) Int64(key string, required bool, def int64) int64 {
	v, ok := h.get(key, required)
	if !ok || v == "" {
		if ok && required && h.err == nil {
			h.err = fmt.Errorf("remoting: the custom field <%s> is empty", key)
		}
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		if h.err == nil {
			h.err = fmt.Errorf("remoting: the custom field <%s> is not a number: %q", key, v)
		}
		return def
	}
	return n
}

// Int32 returns a 32-bit integer field, or def when absent.
func (h *Header) Int32(key string, required bool, def int32) int32 {
	n := h.Int64(key, required, int64(def))
	if n > 1<<31-1 || n < -1<<31 {
		if h.err == nil {
			h.err = fmt.Errorf("remoting: the custom field <%s> is out of int range: %d", key, n)
		}
		return def
	}
	return int32(n)
}

// Bool parses like Java Boolean.parseBoolean (JavaBool).
func (h *Header) Bool(key string) bool {
	v, _ := h.get(key, false)
	return JavaBool(v)
}

// JavaBool is Java's Boolean.parseBoolean: case-insensitive "true" is true,
// anything else false.
func JavaBool(v string) bool {
	return len(v) == 4 && (v[0]|0x20) == 't' && (v[1]|0x20) == 'r' && (v[2]|0x20) == 'u' && (v[3]|0x20) == 'e'
}

// Has reports whether the field is present.
func (h *Header) Has(key string) bool { _, ok := h.ext[key]; return ok }

var languageNames = [...]string{"JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO", "PHP", "OMS", "RUST", "NODE_JS"}

// LanguageName maps a binary language code to its enum name.
func LanguageName(b byte) string {
	if int(b) < len(languageNames) {
		return languageNames[b]
	}
	return "OTHER"
}

// LanguageCode maps an enum name to its binary code (OTHER when unknown).
func LanguageCode(name string) byte {
	for i, n := range languageNames {
		if n == name {
			return byte(i)
		}
	}
	return 7
}
