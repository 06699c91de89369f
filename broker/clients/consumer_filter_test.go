package clients

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
)

func sqlSub(topic, expr string, version int64) *remoting.SubscriptionData {
	return &remoting.SubscriptionData{Topic: topic, SubString: expr, ExpressionType: ExpressionTypeSQL92, SubVersion: version}
}

// TestConsumerFilterRegister follows FilterDataMapByTopic.register: newer
// versions replace, older ones are ignored, an unchanged expression only
// takes the version, a bad expression stores nothing and drops the old
// filter, and topics left out of a heartbeat die.
func TestConsumerFilterRegister(t *testing.T) {
	clk := clock.NewManual(clientTestEpoch)
	m, err := NewConsumerFilterManager("", zerolog.Nop(), clk)
	if err != nil {
		t.Fatal(err)
	}
	tagSub := &remoting.SubscriptionData{Topic: "Tags", SubString: "a || b", ExpressionType: "TAG", SubVersion: 1}
	m.Register("G", []*remoting.SubscriptionData{sqlSub("T", "a = 1", 10), tagSub, sqlSub("U", "", 10)})
	d := m.Get("T", "G")
	if d == nil || d.ClientVersion != 10 || d.Compiled == nil || d.Dead() || d.BornTime != clientTestEpoch.UnixMilli() {
		t.Fatalf("registered %+v", d)
	}
	if m.Get("Tags", "G") != nil || m.Get("U", "G") != nil {
		t.Fatal("a tag subscription or an empty expression got filter data")
	}

	m.Register("G", []*remoting.SubscriptionData{sqlSub("T", "a = 2", 5)})
	if got := m.Get("T", "G"); got.Expression != "a = 1" {
		t.Fatalf("an older version replaced the filter: %q", got.Expression)
	}
	clk.Advance(time.Second)
	m.Register("G", []*remoting.SubscriptionData{sqlSub("T", "a = 1", 20)})
	if got := m.Get("T", "G"); got.ClientVersion != 20 || got.BornTime != d.BornTime {
		t.Fatalf("same expression, newer version: %+v", got)
	}
	m.Register("G", []*remoting.SubscriptionData{sqlSub("T", "a = 2", 30)})
	if got := m.Get("T", "G"); got.Expression != "a = 2" || got.ClientVersion != 30 || got.BornTime == d.BornTime {
		t.Fatalf("new expression: %+v", got)
	}
	m.Register("G", []*remoting.SubscriptionData{sqlSub("T", "a >", 40)})
	if got := m.Get("T", "G"); got != nil {
		t.Fatalf("a bad expression left %+v", got)
	}

	m.Register("G", []*remoting.SubscriptionData{sqlSub("T", "a = 3", 50), sqlSub("V", "b = 1", 50)})
	clk.Advance(time.Second)
	m.Register("G", []*remoting.SubscriptionData{sqlSub("T", "a = 3", 50)})
	if v := m.Get("V", "G"); v == nil || !v.Dead() || v.DeadTime != clk.Now().UnixMilli() {
		t.Fatalf("topic left out of the heartbeat: %+v", v)
	}
	if m.Get("T", "G").Dead() {
		t.Fatal("subscribed topic died")
	}
	m.Unregister("G")
	if !m.Get("T", "G").Dead() {
		t.Fatal("Unregister left the filter alive")
	}
	m.Register("G", []*remoting.SubscriptionData{sqlSub("T", "a = 3", 50)})
	if m.Get("T", "G").Dead() {
		t.Fatal("the same version did not revive the filter")
	}
}

// TestConsumerFilterGroupGone: the last connection of a group leaving marks
// its filters dead (UNREGISTER), through the service wiring.
func TestConsumerFilterGroupGone(t *testing.T) {
	s, err := New(Options{Clock: clock.NewManual(clientTestEpoch), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	s.Filters.Register("G", []*remoting.SubscriptionData{sqlSub("T", "a = 1", 1)})
	s.Consumers.mu.Lock()
	s.Consumers.groups["G"] = &consumerGroup{channels: map[*remoting.Conn]*ClientChannel{}}
	s.Consumers.removeGroupLocked("G")
	s.Consumers.mu.Unlock()
	if !s.Filters.Get("T", "G").Dead() {
		t.Fatal("filter alive after its group left")
	}
}

// TestConsumerFilterFileRoundTrip writes and reloads the file; entries dead
// for a day are dropped, live ones come back dead, and a file whose bloom
// data does not fit is ignored as a whole, as Java does.
func TestConsumerFilterFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), FilterFileName)
	clk := clock.NewManual(clientTestEpoch)
	m, err := NewConsumerFilterManager(path, zerolog.Nop(), clk)
	if err != nil {
		t.Fatal(err)
	}
	m.Register("G", []*remoting.SubscriptionData{sqlSub("T", "a = 1", 7)})
	m.Register("Old", []*remoting.SubscriptionData{sqlSub("T", "b = 1", 7)})
	m.Unregister("Old")
	clk.Advance(filterDataCleanTimeSpan)
	if err := m.Persist(); err != nil {
		t.Fatal(err)
	}
	if m.Get("T", "Old") != nil {
		t.Fatal("a filter dead for a day survived Persist")
	}
	back, err := NewConsumerFilterManager(path, zerolog.Nop(), clk)
	if err != nil {
		t.Fatal(err)
	}
	d := back.Get("T", "G")
	if d == nil || d.Expression != "a = 1" || d.ClientVersion != 7 || d.Compiled == nil || !d.Dead() ||
		d.DeadTime != clk.Now().UnixMilli()-30_000 {
		t.Fatalf("reloaded %+v", d)
	}

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(raw), `"bitNum": 112`, `"bitNum": 64`, 1)
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	ignored, err := NewConsumerFilterManager(path, zerolog.Nop(), clk)
	if err != nil {
		t.Fatal(err)
	}
	if ignored.Get("T", "G") != nil {
		t.Fatal("a file with other bloom data was loaded")
	}
}

// TestCompileCache: results and errors are cached, at most 100 entries.
func TestCompileCache(t *testing.T) {
	m, err := NewConsumerFilterManager("", zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	e1, _ := m.Compile(ExpressionTypeSQL92, "a = 1")
	e2, _ := m.Compile(ExpressionTypeSQL92, "a = 1")
	if e1 == nil || e1 != e2 {
		t.Fatal("the same expression compiled twice")
	}
	if _, err := m.Compile(ExpressionTypeSQL92, "a >"); err == nil {
		t.Fatal("bad expression compiled")
	}
	if _, err := m.Compile("XYZ", "a = 1"); err == nil {
		t.Fatal("unknown type compiled")
	}
	for i := range 150 {
		m.Compile(ExpressionTypeSQL92, "a = "+strings.Repeat("1", i+1))
	}
	if len(m.cache) != compileCacheSize || len(m.order) != compileCacheSize {
		t.Fatalf("cache holds %d (%d in order)", len(m.cache), len(m.order))
	}
}
