package store

import (
	"slices"
	"strings"
	"testing"

	"github.com/rmqio/rmq/message"
)

// keyFilter is a MessageFilter over the tagsCode and the KEYS property; it
// records the properties texts it saw (copied: they live only during the call).
type keyFilter struct {
	tag  int64 // 0: every tag
	keys []string
	seen []string
}

func (f *keyFilter) MatchTags(tagsCode int64) bool { return f.tag == 0 || tagsCode == f.tag }

func (f *keyFilter) MatchProps(p message.Props) bool {
	f.seen = append(f.seen, strings.Clone(string(p)))
	k, ok := p.Lookup("KEYS")
	return ok && slices.Contains(f.keys, k)
}

func TestGetMessageFiltered(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()))
	for i := 0; i < 30; i++ {
		mustPut(t, s, testMessage("MF", 0, i))
	}
	waitDispatched(t, s)
	tag1 := message.TagsHash("tag1")
	tests := []struct {
		name      string
		f         *keyFilter
		offset    int64
		maxMsgs   int
		want      GetStatus
		wantFlags []int32
		wantNext  int64
		wantSeen  int // MatchProps calls: only units that passed MatchTags
	}{
		{name: "properties select, skipped units count", f: &keyFilter{keys: []string{"k3", "k11"}}, maxMsgs: 32,
			want: Found, wantFlags: []int32{3, 11}, wantNext: 30, wantSeen: 30},
		{name: "tags first, then properties", f: &keyFilter{tag: tag1, keys: []string{"k4", "k5", "k7"}}, maxMsgs: 32,
			want: Found, wantFlags: []int32{4, 7}, wantNext: 30, wantSeen: 10},
		{name: "message limit stops the scan", f: &keyFilter{keys: []string{"k1", "k2", "k9"}}, maxMsgs: 2,
			want: Found, wantFlags: []int32{1, 2}, wantNext: 3, wantSeen: 3},
		{name: "nothing matches", f: &keyFilter{keys: []string{"nope"}}, offset: 5, maxMsgs: 32,
			want: NoMatchedMessage, wantNext: 30, wantSeen: 25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.GetMessageFiltered("MF", 0, tt.offset, tt.maxMsgs, 1<<20, tt.f)
			var flags []int32
			total := 0
			for _, b := range r.Messages {
				m, err := message.DecodeRecord(b)
				if err != nil {
					t.Fatal(err)
				}
				flags = append(flags, m.Flag)
				total += len(b)
			}
			if r.Status != tt.want || !slices.Equal(flags, tt.wantFlags) || r.NextBeginOffset != tt.wantNext || len(tt.f.seen) != tt.wantSeen {
				t.Fatalf("GetMessageFiltered = %v flags=%v next=%d props seen %d; want %v flags=%v next=%d seen %d",
					r.Status, flags, r.NextBeginOffset, len(tt.f.seen), tt.want, tt.wantFlags, tt.wantNext, tt.wantSeen)
			}
			if len(r.Body()) != total {
				t.Fatalf("body %d bytes, messages %d", len(r.Body()), total)
			}
			for _, p := range tt.f.seen {
				if message.Props(p).Get("UNIQ_KEY") == "" || message.Props(p).Get("TAGS") == "" {
					t.Fatalf("MatchProps got %q, not the record's properties", p)
				}
			}
		})
	}
}
