package harness

import (
	"bytes"
	"strings"
	"sync"
)

// logBuffer collects the output of every run of a process, whole lines at a
// time, so stdout and stderr interleave by line and never mid-line.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
	// watch is the readiness watcher of the current run; it sees stdout lines.
	watch lineWatcher
}

func (b *logBuffer) add(line string, stdout bool) {
	b.mu.Lock()
	b.lines = append(b.lines, line)
	w := b.watch
	b.mu.Unlock()
	if stdout && w != nil {
		w.see(line)
	}
}

// lineWatcher sees every stdout line of the current run.
type lineWatcher interface{ see(line string) }

func (b *logBuffer) setWatch(w lineWatcher) {
	b.mu.Lock()
	b.watch = w
	b.mu.Unlock()
}

// mark is the number of lines seen so far.
func (b *logBuffer) mark() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.lines)
}

// since joins the lines after mark.
func (b *logBuffer) since(mark int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if mark < 0 || mark > len(b.lines) {
		mark = 0
	}
	return strings.Join(b.lines[mark:], "\n")
}

// stream is an io.Writer for one of the child's output streams.
type stream struct {
	buf    *logBuffer
	prefix string
	stdout bool
	mu     sync.Mutex
	part   []byte
}

func (s *stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.part = append(s.part, p...)
	for {
		i := bytes.IndexByte(s.part, '\n')
		if i < 0 {
			break
		}
		s.buf.add(s.prefix+strings.TrimRight(string(s.part[:i]), "\r"), s.stdout)
		s.part = s.part[i+1:]
	}
	return len(p), nil
}

// flush emits a trailing line that had no newline.
func (s *stream) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.part) > 0 {
		s.buf.add(s.prefix+string(s.part), s.stdout)
		s.part = nil
	}
}

// Readiness markers printed on stdout by `rmq standalone` (the stock lines).
const (
	NamesrvReadyMarker = "The Name Server boot success"
	brokerReadyPrefix  = "The broker["
	brokerReadySuffix  = "boot success"
)

// readyWatch closes ready once both the name server and the broker line were seen.
type readyWatch struct {
	mu              sync.Mutex
	namesrv, broker bool
	ready           chan struct{}
}

func newReadyWatch() *readyWatch { return &readyWatch{ready: make(chan struct{})} }

func (w *readyWatch) see(line string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.namesrv && w.broker {
		return
	}
	if strings.Contains(line, NamesrvReadyMarker) {
		w.namesrv = true
	}
	if i := strings.Index(line, brokerReadyPrefix); i >= 0 && strings.Contains(line[i:], brokerReadySuffix) {
		w.broker = true
	}
	if w.namesrv && w.broker {
		close(w.ready)
	}
}
