package conf

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

type strOnly struct {
	A string `conf:"a"`
}

func TestParseSyntax(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []entry
	}{
		{name: "equals", input: "a=b\n", want: []entry{{key: "a", value: "b", line: 1}}},
		{name: "spaced equals", input: "  a = b  \n", want: []entry{{key: "a", value: "b", line: 1}}},
		{name: "colon", input: "a: b\n", want: []entry{{key: "a", value: "b", line: 1}}},
		{name: "blank separator", input: "a   b c\n", want: []entry{{key: "a", value: "b c", line: 1}}},
		{name: "blank then equals", input: "a \t= b\n", want: []entry{{key: "a", value: "b", line: 1}}},
		{name: "only first separator", input: "a==b=c\n", want: []entry{{key: "a", value: "=b=c", line: 1}}},
		{name: "key without value", input: "a\n", want: []entry{{key: "a", value: "", line: 1}}},
		{name: "empty value", input: "a=\n", want: []entry{{key: "a", value: "", line: 1}}},
		{name: "comments and blanks", input: "# x=y\n\n  ! z=w\n\t\na=1\n", want: []entry{{key: "a", value: "1", line: 5}}},
		{name: "hash inside value", input: "a=b#c\n", want: []entry{{key: "a", value: "b#c", line: 1}}},
		{name: "crlf", input: "a=b\r\nc=d\r\n", want: []entry{{key: "a", value: "b", line: 1}, {key: "c", value: "d", line: 2}}},
		{name: "bom", input: "\ufeffa=b\n", want: []entry{{key: "a", value: "b", line: 1}}},
		{name: "no final newline", input: "a=b", want: []entry{{key: "a", value: "b", line: 1}}},
		{name: "continuation", input: "a=one\\\n    two\nb=3\n", want: []entry{{key: "a", value: "onetwo", line: 1}, {key: "b", value: "3", line: 3}}},
		{name: "continuation into comment-like line", input: "a=x\\\n  # y\n", want: []entry{{key: "a", value: "x# y", line: 1}}},
		{name: "escaped backslash ends line", input: "a=x\\\\\nb=y\n", want: []entry{{key: "a", value: `x\`, line: 1}, {key: "b", value: "y", line: 2}}},
		{name: "continuation at eof", input: "a=x\\", want: []entry{{key: "a", value: "x", line: 1}}},
		{name: "escapes", input: `a=t\tn\nr\rf\fq\q` + "\n", want: []entry{{key: "a", value: "t\tn\nr\rf\fqq", line: 1}}},
		{name: "escaped separator in key", input: `a\=b\:c\ d=e` + "\n", want: []entry{{key: "a=b:c d", value: "e", line: 1}}},
		{name: "unicode escape", input: `a=\u0041\u00e9` + "\n", want: []entry{{key: "a", value: "Aé", line: 1}}},
		{name: "surrogate pair", input: `a=\uD83D\uDE00` + "\n", want: []entry{{key: "a", value: "😀", line: 1}}},
		{name: "lone surrogate", input: `a=\uD83Dx` + "\n", want: []entry{{key: "a", value: "\uFFFDx", line: 1}}},
		{name: "escaped trailing blank kept", input: "a=b\\ \n", want: []entry{{key: "a", value: "b ", line: 1}}},
		{name: "escaped leading blank kept", input: "a=\\ b\n", want: []entry{{key: "a", value: " b", line: 1}}},
		{name: "utf8 value", input: "a=日本\n", want: []entry{{key: "a", value: "日本", line: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(strings.NewReader(tt.input), "f")
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestParseSyntaxErrors(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		wantMsg string
	}{
		{name: "short unicode", input: "x=1\na=\\u12\n", wantMsg: "f.conf:2: "},
		{name: "bad hex", input: "a=\\u12zz\n", wantMsg: "f.conf:1: "},
		{name: "bad hex in key", input: "\n\nk\\uXYZW=1\n", wantMsg: "f.conf:3: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dst strOnly
			_, err := Load(strings.NewReader(tt.input), "f.conf", &dst)
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("err = %v, want ErrSyntax", err)
			}
			if !strings.HasPrefix(err.Error(), tt.wantMsg) {
				t.Fatalf("err = %q, want prefix %q", err, tt.wantMsg)
			}
		})
	}
}

type allTypes struct {
	S    string        `conf:"s"`
	B    bool          `conf:"b"`
	I    int           `conf:"i"`
	I8   int8          `conf:"i8"`
	I16  int16         `conf:"i16"`
	I32  int32         `conf:"i32"`
	I64  int64         `conf:"i64"`
	U    uint          `conf:"u"`
	U8   uint8         `conf:"u8"`
	U32  uint32        `conf:"u32"`
	U64  uint64        `conf:"u64"`
	F32  float32       `conf:"f32"`
	F64  float64       `conf:"f64"`
	DMs  time.Duration `conf:"dms"`
	DS   time.Duration `conf:"ds,s"`
	DH   time.Duration `conf:"dh,h"`
	Skip string        `conf:"-"`
	Bare string
}

func TestLoadTypes(t *testing.T) {
	tests := []struct {
		name  string
		input string
		check func(t *testing.T, got allTypes)
	}{
		{name: "string", input: "s = hello world ", check: func(t *testing.T, g allTypes) { eq(t, g.S, "hello world") }},
		{name: "bool true", input: "b=true", check: func(t *testing.T, g allTypes) { eq(t, g.B, true) }},
		{name: "bool TRUE", input: "b=TRUE", check: func(t *testing.T, g allTypes) { eq(t, g.B, true) }},
		{name: "bool yes is false", input: "b=yes", check: func(t *testing.T, g allTypes) { eq(t, g.B, false) }},
		{name: "bool 1 is false", input: "b=1", check: func(t *testing.T, g allTypes) { eq(t, g.B, false) }},
		{name: "int", input: "i=-42", check: func(t *testing.T, g allTypes) { eq(t, g.I, -42) }},
		{name: "int plus sign", input: "i=+7", check: func(t *testing.T, g allTypes) { eq(t, g.I, 7) }},
		{name: "int8", input: "i8=-128", check: func(t *testing.T, g allTypes) { eq(t, g.I8, int8(-128)) }},
		{name: "int16", input: "i16=32767", check: func(t *testing.T, g allTypes) { eq(t, g.I16, int16(32767)) }},
		{name: "int32", input: "i32=2147483647", check: func(t *testing.T, g allTypes) { eq(t, g.I32, int32(2147483647)) }},
		{name: "int64", input: "i64=1073741824", check: func(t *testing.T, g allTypes) { eq(t, g.I64, int64(1<<30)) }},
		{name: "uint", input: "u=5", check: func(t *testing.T, g allTypes) { eq(t, g.U, uint(5)) }},
		{name: "uint8", input: "u8=255", check: func(t *testing.T, g allTypes) { eq(t, g.U8, uint8(255)) }},
		{name: "uint32", input: "u32=4294967295", check: func(t *testing.T, g allTypes) { eq(t, g.U32, uint32(4294967295)) }},
		{name: "uint64", input: "u64=18446744073709551615", check: func(t *testing.T, g allTypes) { eq(t, g.U64, uint64(18446744073709551615)) }},
		{name: "float32", input: "f32=0.5", check: func(t *testing.T, g allTypes) { eq(t, g.F32, float32(0.5)) }},
		{name: "float64", input: "f64=1e3", check: func(t *testing.T, g allTypes) { eq(t, g.F64, 1000.0) }},
		{name: "duration default ms", input: "dms=1500", check: func(t *testing.T, g allTypes) { eq(t, g.DMs, 1500*time.Millisecond) }},
		{name: "duration seconds", input: "ds=120", check: func(t *testing.T, g allTypes) { eq(t, g.DS, 120*time.Second) }},
		{name: "duration hours", input: "dh=48", check: func(t *testing.T, g allTypes) { eq(t, g.DH, 48*time.Hour) }},
		{name: "duration go syntax", input: "ds=1m30s", check: func(t *testing.T, g allTypes) { eq(t, g.DS, 90*time.Second) }},
		{name: "last value wins", input: "i=1\ni=2", check: func(t *testing.T, g allTypes) { eq(t, g.I, 2) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := allTypes{Skip: "keep", Bare: "keep"}
			if _, err := Load(strings.NewReader(tt.input), "t.conf", &got); err != nil {
				t.Fatalf("Load: %v", err)
			}
			tt.check(t, got)
			eq(t, got.Skip, "keep")
			eq(t, got.Bare, "keep")
		})
	}
}

func TestLoadValueErrors(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		wantMsg string
	}{
		{name: "not a number", input: "s=x\n\ni=abc\n", wantMsg: `broker.conf:3: i: invalid int "abc"`},
		{name: "int32 overflow", input: "i32=2147483648", wantMsg: `broker.conf:1: i32: out of range for int32 "2147483648"`},
		{name: "int8 overflow", input: "i8=128", wantMsg: `broker.conf:1: i8: out of range for int8 "128"`},
		{name: "negative uint", input: "u=-1", wantMsg: `broker.conf:1: u: invalid uint "-1"`},
		{name: "hex not accepted", input: "i64=0x10", wantMsg: `broker.conf:1: i64: invalid int64 "0x10"`},
		{name: "empty int", input: "i=", wantMsg: `broker.conf:1: i: invalid int ""`},
		{name: "bad float", input: "f64=one", wantMsg: `broker.conf:1: f64: invalid float64 "one"`},
		{name: "bad duration", input: "dms=soon", wantMsg: `broker.conf:1: dms: invalid time.Duration "soon"`},
		{name: "duration overflow", input: "dh=9223372036854775807", wantMsg: `broker.conf:1: dh: out of range for time.Duration "9223372036854775807"`},
		{name: "position of continued line", input: "s=a\\\n b\ni=1\\\n 2x", wantMsg: `broker.conf:3: i: invalid int "12x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got allTypes
			_, err := Load(strings.NewReader(tt.input), "broker.conf", &got)
			if !errors.Is(err, ErrBadValue) {
				t.Fatalf("err = %v, want ErrBadValue", err)
			}
			var ve *ValueError
			if !errors.As(err, &ve) {
				t.Fatalf("err %T is not a *ValueError", err)
			}
			if err.Error() != tt.wantMsg {
				t.Fatalf("err = %q, want %q", err, tt.wantMsg)
			}
		})
	}
}

func TestLoadReportsEveryBadValueAndAppliesTheRest(t *testing.T) {
	var got allTypes
	_, err := Load(strings.NewReader("i=x\ns=ok\ni32=y\n"), "b.conf", &got)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"b.conf:1: i:", "b.conf:3: i32:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	eq(t, got.S, "ok")
}

func TestLoadWarnings(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{name: "none", input: "s=1\ni=2", want: nil},
		{name: "unknown", input: "s=1\n# c\nbogusKey=2\n", want: []string{`n.conf:3: unknown key "bogusKey"`}},
		{name: "case sensitive", input: "S=1", want: []string{`n.conf:1: unknown key "S"; did you mean "s"?`}},
		{name: "skipped field is unknown", input: "Skip=1", want: []string{`n.conf:1: unknown key "Skip"`}},
		{name: "repeat", input: "s=1\ns=2", want: []string{`n.conf:2: key "s" repeats line 1; the last value wins`}},
		{name: "repeat unknown", input: "x=1\nx=2", want: []string{
			`n.conf:1: unknown key "x"`,
			`n.conf:2: key "x" repeats line 1; the last value wins`,
			`n.conf:2: unknown key "x"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got allTypes
			warnings, err := Load(strings.NewReader(tt.input), "n.conf", &got)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !reflect.DeepEqual(warnings, tt.want) {
				t.Fatalf("warnings = %q, want %q", warnings, tt.want)
			}
		})
	}
}

type base struct {
	Port int `conf:"listenPort"`
}

type withEmbedded struct {
	base
	Name string `conf:"brokerName"`
}

type Exported struct {
	Host string `conf:"listenHost"`
}

type withExportedEmbedded struct {
	Exported
	Port int `conf:"listenPort"`
}

func TestLoadSeveralDestinations(t *testing.T) {
	var (
		a struct {
			Port int    `conf:"listenPort"`
			Name string `conf:"brokerName"`
		}
		b struct {
			Port    int  `conf:"listenPort"`
			Enabled bool `conf:"orderMessageEnable"`
		}
	)
	warnings, err := Load(strings.NewReader("listenPort=10911\nbrokerName=x\norderMessageEnable=true\n"), "m", &a, &b)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Load: %v %q", err, warnings)
	}
	eq(t, a.Port, 10911)
	eq(t, b.Port, 10911)
	eq(t, a.Name, "x")
	eq(t, b.Enabled, true)
}

func TestLoadEmbedded(t *testing.T) {
	var e withExportedEmbedded
	warnings, err := Load(strings.NewReader("listenHost=h\nlistenPort=3"), "e", &e)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Load: %v %q", err, warnings)
	}
	eq(t, e.Host, "h")
	eq(t, e.Port, 3)

	// An unexported embedded struct is not searched: its keys are unknown.
	var u withEmbedded
	warnings, err = Load(strings.NewReader("listenPort=3"), "e", &u)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, len(warnings), 1)
	eq(t, u.Port, 0)
}

func TestLoadBadDestination(t *testing.T) {
	var s strOnly
	var nilPtr *strOnly
	n := 3
	tests := []struct {
		name string
		dst  []any
	}{
		{name: "none", dst: nil},
		{name: "not a pointer", dst: []any{s}},
		{name: "nil pointer", dst: []any{nilPtr}},
		{name: "pointer to int", dst: []any{&n}},
		{name: "unsupported type", dst: []any{&struct {
			L []string `conf:"l"`
		}{}}},
		{name: "unexported tagged", dst: []any{&struct {
			x int `conf:"x"`
		}{}}},
		{name: "empty key", dst: []any{&struct {
			X int `conf:",ms"`
		}{}}},
		{name: "bad unit", dst: []any{&struct {
			D time.Duration `conf:"d,days"`
		}{}}},
		{name: "one good one bad", dst: []any{&s, s}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(strings.NewReader("a=1"), "x", tt.dst...)
			if !errors.Is(err, ErrTarget) {
				t.Fatalf("err = %v, want ErrTarget", err)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "broker.conf")
	if err := os.WriteFile(path, []byte("# x\ni=5\nnope=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got allTypes
	warnings, err := LoadFile(path, &got)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, got.I, 5)
	if want := []string{path + `:3: unknown key "nope"`}; !reflect.DeepEqual(warnings, want) {
		t.Fatalf("warnings = %q, want %q", warnings, want)
	}

	if _, err := LoadFile(filepath.Join(dir, "missing.conf"), &got); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: err = %v", err)
	}
}

// stockKeys mirrors the keys of the shipped sample files.
type stockKeys struct {
	BrokerClusterName  string `conf:"brokerClusterName"`
	BrokerName         string `conf:"brokerName"`
	BrokerID           int64  `conf:"brokerId"`
	DeleteWhen         string `conf:"deleteWhen"`
	FileReservedTime   int    `conf:"fileReservedTime"`
	BrokerRole         string `conf:"brokerRole"`
	FlushDiskType      string `conf:"flushDiskType"`
	BrokerIP1          string `conf:"brokerIP1"`
	ListenPort         int    `conf:"listenPort"`
	OrderMessageEnable bool   `conf:"orderMessageEnable"`
	KVConfigPath       string `conf:"kvConfigPath"`
}

func TestShippedFiles(t *testing.T) {
	tests := []struct {
		file string
		want stockKeys
	}{
		{file: "broker.conf", want: stockKeys{
			BrokerClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerID: 0,
			DeleteWhen: "04", FileReservedTime: 48, BrokerRole: "ASYNC_MASTER",
			FlushDiskType: "ASYNC_FLUSH", BrokerIP1: "127.0.0.1",
		}},
		{file: "namesrv.conf", want: stockKeys{ListenPort: 9876}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var got stockKeys
			warnings, err := LoadFile(tt.file, &got)
			if err != nil || len(warnings) != 0 {
				t.Fatalf("LoadFile: %v %q", err, warnings)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPrintRoundTrip(t *testing.T) {
	src := allTypes{
		S: "  a=b:c #x \\ \t\n\u0001 ", B: true, I: -1, I8: -128, I16: 1, I32: 1 << 30, I64: -1 << 62,
		U: 1, U8: 255, U32: 1 << 31, U64: 1 << 63, F32: 0.25, F64: 1.5e-9,
		DMs: 1500 * time.Millisecond, DS: 1500 * time.Millisecond, DH: 48 * time.Hour,
		Skip: "not printed", Bare: "not printed",
	}
	var buf bytes.Buffer
	Print(&buf, &src)
	out := buf.String()
	if strings.Contains(out, "not printed") {
		t.Fatalf("printed a skipped field:\n%s", out)
	}
	if !strings.HasPrefix(out, "s=") || !strings.Contains(out, "\ndh=48\n") || !strings.Contains(out, "\nds=1.5s\n") {
		t.Fatalf("unexpected output:\n%s", out)
	}
	if n := strings.Count(out, "\n"); n != 16 {
		t.Fatalf("printed %d lines, want 16:\n%s", n, out)
	}
	var back allTypes
	warnings, err := Load(strings.NewReader(out), "printed", &back)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Load(Print): %v %q\n%s", err, warnings, out)
	}
	back.Skip, back.Bare = src.Skip, src.Bare
	if back != src {
		t.Fatalf("round trip:\n got %+v\nwant %+v\n%s", back, src, out)
	}
}

func TestPrintDedupAndKeys(t *testing.T) {
	a := struct {
		Port int    `conf:"listenPort"`
		Name string `conf:"brokerName"`
	}{Port: 1, Name: "n"}
	b := struct {
		Port  int    `conf:"listenPort"`
		Extra string `conf:"extra"`
	}{Port: 2, Extra: "e"}

	var all bytes.Buffer
	Print(&all, a, &b, 42)
	eq(t, all.String(), "listenPort=1\nbrokerName=n\nextra=e\n")

	var some bytes.Buffer
	PrintKeys(&some, []string{"extra", "missing", "listenPort"}, &a, b)
	eq(t, some.String(), "extra=e\nlistenPort=1\n")

	var none bytes.Buffer
	PrintKeys(&none, nil, &a)
	eq(t, none.String(), "")

	if got, want := Keys(&a, b), []string{"listenPort", "brokerName", "extra"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Keys = %q, want %q", got, want)
	}
}

func eq[T comparable](t *testing.T, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestLoadHintsAndBoolWarnings(t *testing.T) {
	var dst struct {
		ListenPort int  `conf:"listenPort"`
		AutoCreate bool `conf:"autoCreateTopicEnable"`
	}
	warnings, err := Load(strings.NewReader("listenPot=1\nautoCreateTopicEnable=yes\nzzzzzzzzzz=1\n"), "b.conf", &dst)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`b.conf:1: unknown key "listenPot"; did you mean "listenPort"?`,
		`b.conf:2: key "autoCreateTopicEnable": "yes" is neither true nor false; read as false, as stock does`,
		`b.conf:3: unknown key "zzzzzzzzzz"`,
	}
	if !reflect.DeepEqual(warnings, want) {
		t.Fatalf("warnings = %q, want %q", warnings, want)
	}
	if dst.AutoCreate {
		t.Fatal("yes read as true; stock Boolean.parseBoolean reads it as false")
	}
}

func TestClosest(t *testing.T) {
	known := []string{"listenPort", "brokerIP1", "brokerName", "diskMaxUsedSpaceRatio"}
	for key, want := range map[string]string{"listenPot": "listenPort", "brokername": "brokerName", "brokerIP": "brokerIP1", "timerWheelEnable": "", "": ""} {
		if got := Closest(key, known); got != want {
			t.Errorf("Closest(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestRewriteKeysContinuations(t *testing.T) {
	src := struct {
		S string `conf:"s"`
	}{"new"}
	for _, c := range []struct{ old, want string }{
		// A continuation line that looks like the key is part of a's value.
		{"a=1\\\n s=2\ns=old\n", "a=1\\\n s=2\ns=new\n"},
		// Text ending inside a continuation is closed before the append.
		{"0\\", "0\\\n\ns=new\n"},
		// A comment ending in a backslash does not continue.
		{"# c\\\ns=old", "# c\\\ns=new\n"},
	} {
		if got := string(RewriteKeys([]byte(c.old), []string{"s"}, &src)); got != c.want {
			t.Errorf("RewriteKeys(%q) = %q, want %q", c.old, got, c.want)
		}
	}
}
