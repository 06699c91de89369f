package remoting

import (
	"errors"
	"testing"
)

func TestHeaderReader(t *testing.T) {
	ext := map[string]string{
		"topic": "T", "queueId": "3", "big": "9223372036854775807", "neg": "-5", "empty": "",
		"word": "abc", "over": "2147483648", "yes": "TrUe", "no": "yes",
	}
	tests := []struct {
		name    string
		read    func(h *Header) any
		want    any
		wantErr string // "" when Err must stay nil
		missing bool   // Err wraps ErrMissingField
	}{
		{name: "string present", read: func(h *Header) any { return h.Str("topic", true) }, want: "T"},
		{name: "string absent optional", read: func(h *Header) any { return h.Str("nope", false) }, want: ""},
		{name: "string absent required", read: func(h *Header) any { return h.Str("nope", true) }, want: "",
			wantErr: "the custom field <nope> is null", missing: true},
		{name: "int64", read: func(h *Header) any { return h.Int64("big", true, 0) }, want: int64(9223372036854775807)},
		{name: "int64 negative", read: func(h *Header) any { return h.Int64("neg", true, 0) }, want: int64(-5)},
		{name: "int64 default", read: func(h *Header) any { return h.Int64("nope", false, 42) }, want: int64(42)},
		{name: "int64 empty optional", read: func(h *Header) any { return h.Int64("empty", false, 7) }, want: int64(7)},
		{name: "int64 empty required", read: func(h *Header) any { return h.Int64("empty", true, 7) }, want: int64(7),
			wantErr: "remoting: the custom field <empty> is empty"},
		{name: "int64 not a number", read: func(h *Header) any { return h.Int64("word", false, 1) }, want: int64(1),
			wantErr: `remoting: the custom field <word> is not a number: "abc"`},
		{name: "int32", read: func(h *Header) any { return h.Int32("queueId", true, -1) }, want: int32(3)},
		{name: "int32 overflow", read: func(h *Header) any { return h.Int32("over", true, -1) }, want: int32(-1),
			wantErr: "remoting: the custom field <over> is out of int range: 2147483648"},
		{name: "bool any case", read: func(h *Header) any { return h.Bool("yes") }, want: true},
		{name: "bool other text", read: func(h *Header) any { return h.Bool("no") }, want: false},
		{name: "bool absent", read: func(h *Header) any { return h.Bool("nope") }, want: false},
		{name: "has", read: func(h *Header) any { return h.Has("empty") }, want: true},
		{name: "has not", read: func(h *Header) any { return h.Has("nope") }, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := (&Command{ExtFields: ext}).Header()
			if got := tc.read(h); got != tc.want {
				t.Fatalf("got %v (%T), want %v (%T)", got, got, tc.want, tc.want)
			}
			err := h.Err()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Err = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Fatalf("Err = %v, want %q", err, tc.wantErr)
			case errors.Is(err, ErrMissingField) != tc.missing:
				t.Fatalf("Err = %v; wraps ErrMissingField = %v, want %v", err, !tc.missing, tc.missing)
			}
		})
	}
}

func TestHeaderKeepsFirstError(t *testing.T) {
	h := (&Command{ExtFields: map[string]string{"n": "x"}}).Header()
	h.Str("a", true)
	h.Int64("n", true, 0)
	h.Str("b", true)
	if err := h.Err(); err == nil || err.Error() != "the custom field <a> is null" {
		t.Fatalf("Err = %v, want the error about <a>", err)
	}
}

func TestHeaderOfNilExtFields(t *testing.T) {
	h := (&Command{}).Header()
	if h.Has("a") || h.Str("a", false) != "" || h.Int64("a", false, 3) != 3 || h.Err() != nil {
		t.Fatal("reading absent optional fields of a nil map must yield defaults and no error")
	}
}

func TestLanguageCodes(t *testing.T) {
	tests := []struct {
		name string
		code byte
	}{
		{name: "JAVA", code: 0}, {name: "CPP", code: 1}, {name: "DOTNET", code: 2}, {name: "PYTHON", code: 3},
		{name: "DELPHI", code: 4}, {name: "ERLANG", code: 5}, {name: "RUBY", code: 6}, {name: "OTHER", code: 7},
		{name: "HTTP", code: 8}, {name: "GO", code: 9}, {name: "PHP", code: 10}, {name: "OMS", code: 11},
		{name: "RUST", code: 12}, {name: "NODE_JS", code: 13},
	}
	for _, tc := range tests {
		if got := LanguageCode(tc.name); got != tc.code {
			t.Errorf("LanguageCode(%s) = %d, want %d", tc.name, got, tc.code)
		}
		if got := LanguageName(tc.code); got != tc.name {
			t.Errorf("LanguageName(%d) = %s, want %s", tc.code, got, tc.name)
		}
	}
	if LanguageCode("KOTLIN") != 7 || LanguageName(14) != "OTHER" || LanguageName(255) != "OTHER" {
		t.Error("unknown languages must map to OTHER (7)")
	}
}

func TestNewRequestAndResponse(t *testing.T) {
	req := NewRequest(PullMessage, nil, []byte("b"))
	next := NewRequest(PullMessage, nil, nil)
	if next.Opaque == req.Opaque {
		t.Fatalf("two requests share opaque %d", req.Opaque)
	}
	if req.Language != "GO" || req.Version != Version || req.IsResponse() || req.IsOneway() {
		t.Fatalf("request %+v", req)
	}
	req.SerializeType = SerializeRocketMQ
	req.SetExt("topic", "T")
	req.SetExtInt("queueId", -3)
	if req.ExtFields["topic"] != "T" || req.ExtFields["queueId"] != "-3" {
		t.Fatalf("ext %v", req.ExtFields)
	}
	resp := NewResponse(req, PullNotFound, "none")
	if resp.Opaque != req.Opaque || !resp.IsResponse() || resp.Code != PullNotFound || resp.Remark != "none" ||
		resp.SerializeType != SerializeRocketMQ || resp.ExtFields != nil || resp.Body != nil {
		t.Fatalf("response %+v", resp)
	}
}
