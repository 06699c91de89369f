package schedule

import (
	"errors"
	"testing"
	"time"
)

func TestParseLevelsDefault(t *testing.T) {
	l, err := ParseLevels(DefaultLevels)
	if err != nil {
		t.Fatal(err)
	}
	if l.Max() != 18 {
		t.Fatalf("max = %d", l.Max())
	}
	for _, tc := range []struct {
		level int
		want  time.Duration
	}{
		{level: 1, want: time.Second}, {level: 2, want: 5 * time.Second}, {level: 3, want: 10 * time.Second},
		{level: 5, want: time.Minute}, {level: 17, want: time.Hour}, {level: 18, want: 2 * time.Hour},
		{level: 0, want: 0}, {level: 19, want: 0},
	} {
		if got := l.Delay(tc.level); got != tc.want {
			t.Errorf("Delay(%d) = %v, want %v", tc.level, got, tc.want)
		}
	}
	if l.String() != DefaultLevels {
		t.Fatalf("String() = %q", l.String())
	}
}

func TestParseLevelsUnitsAndErrors(t *testing.T) {
	l, err := ParseLevels("  500s 2d\t3h ")
	if err != nil {
		t.Fatal(err)
	}
	if l[0] != 500*time.Second || l[1] != 48*time.Hour || l[2] != 3*time.Hour {
		t.Fatalf("got %v", l)
	}
	for _, bad := range []string{"", "   ", "1x", "s", "-1s", "1.5s", "abc", "1s 2", "99999999999999999999s", "1000d"} {
		if _, err := ParseLevels(bad); !errors.Is(err, ErrBadLevels) {
			t.Errorf("ParseLevels(%q) err = %v, want ErrBadLevels", bad, err)
		}
	}
}

func TestClampAndDeliverAt(t *testing.T) {
	l, _ := ParseLevels("1s 5s 10s")
	for _, tc := range []struct{ in, want int }{{in: 1, want: 1}, {in: 3, want: 3}, {in: 4, want: 3}, {in: 100, want: 3}, {in: 0, want: 0}, {in: -2, want: -2}} {
		if got := l.Clamp(tc.in); got != tc.want {
			t.Errorf("Clamp(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
	if got := l.DeliverAt(2, 1_000); got != 6_000 {
		t.Fatalf("DeliverAt = %d", got)
	}
}

func TestOffsetFileReadsJavaBareKeys(t *testing.T) {
	m, err := decodeOffsets([]byte(`{"offsetTable":{1:23,2:0, 18 : 7}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m[1] != 23 || m[2] != 0 || m[18] != 7 || len(m) != 3 {
		t.Fatalf("got %v", m)
	}
	back, err := decodeOffsets(encodeOffsets(m))
	if err != nil || len(back) != 3 || back[18] != 7 {
		t.Fatalf("round trip %v %v", back, err)
	}
	if got := string(encodeOffsets(m)); got != `{"offsetTable":{"1":23,"2":0,"18":7}}` {
		t.Fatalf("encodeOffsets = %s", got)
	}
	// A 5.x broker's file: pretty-printed by ConfigManager.persist, with a dataVersion.
	m, err = decodeOffsets([]byte("{\n\t\"dataVersion\":{\n\t\t\"counter\":3,\n\t\t\"timestamp\":1700000000000\n\t},\n\t\"offsetTable\":{\n\t\t3:41\n\t}\n}"))
	if err != nil || len(m) != 1 || m[3] != 41 {
		t.Fatalf("5.x file: %v %v", m, err)
	}
	for _, bad := range []string{`{"offsetTable":{"x":1}}`, `{"offsetTable":{1:`} {
		if m, err := decodeOffsets([]byte(bad)); err == nil {
			t.Errorf("decodeOffsets(%s) = %v, want an error", bad, m)
		}
	}
}
