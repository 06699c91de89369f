package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/message"
)

// Diverter moves aside a message a delivery service (delay levels, timer
// wheel) can never store on its destination, so that the messages queued
// behind it are not held up:
//
//  1. a message for a group's retry topic %RETRY%<g> goes to %DLQ%<g>, where
//     mqadmin and consumers can find it, when that is a valid topic and the
//     store takes it;
//  2. anything else is appended to the dead-letter log, one JSON object per
//     line (DeadLetter), and fsynced.
//
// Each diverted message is logged once, at error level.
type Diverter struct {
	// Source names the service in log lines and records ("schedule", "timer").
	Source string
	// Put stores a message (the store's PutMessage).
	Put func(*message.Message) (*PutResult, error)
	// EnsureDLQ, when set, is called before a message goes to a DLQ topic so
	// that the broker's topic table knows it; false skips the DLQ.
	EnsureDLQ func(topic string) bool
	// Path is the dead-letter log file.
	Path   string
	Logger zerolog.Logger
	// Clock stamps records (nil: the wall clock).
	Clock clock.Clock
	// FS writes and syncs the log (nil: the real file system): the FS of
	// the store the service belongs to.
	FS FS

	mu sync.Mutex
}

// DeadLetter is one line of the dead-letter log.
type DeadLetter struct {
	TimeMs         int64             `json:"timeMs"`
	Source         string            `json:"source"`
	Reason         string            `json:"reason"`
	Topic          string            `json:"topic"`
	QueueID        int32             `json:"queueId"`
	From           int64             `json:"from"` // commitlog offset of the copy it was read from
	Flag           int32             `json:"flag"`
	SysFlag        int32             `json:"sysFlag"`
	ReconsumeTimes int32             `json:"reconsumeTimes"`
	BornTimestamp  int64             `json:"bornTimestamp"`
	Properties     map[string]string `json:"properties"`
	Body           []byte            `json:"body"` // base64
}

// Diverted tells where Divert put a message.
type Diverted int

// Places a diverted message ends up in.
const (
	ToDLQ Diverted = iota + 1
	ToDeadLetterLog
)

// Divert moves m (read from commitlog offset from, refused with cause) out
// of the way. An error means it could not be moved for a transient reason
// (the DLQ put failed transiently, the log could not be written): the caller
// retries later, as for a transient delivery failure.
func (d *Diverter) Divert(m *message.Message, from int64, cause error) (Diverted, error) {
	props := m.Properties
	if props == nil {
		props = message.ParseProperties(m.RawProperties)
	}
	if group, ok := message.RetryTopicGroup(m.Topic); ok {
		dlq := message.DLQTopic(group)
		if message.ValidateTopic(dlq) == nil && (d.EnsureDLQ == nil || d.EnsureDLQ(dlq)) {
			out := make(map[string]string, len(props))
			for k, v := range props {
				out[k] = v
			}
			delete(out, message.PropDelay)
			cp := *m
			cp.Topic, cp.QueueID, cp.Properties, cp.RawProperties = dlq, 0, out, ""
			_, err := d.Put(&cp)
			switch {
			case err == nil:
				d.Logger.Error().Str("topic", m.Topic).Str("dlq", dlq).Int64("from", from).Str("uniqKey", props[message.PropUniqKey]).
					AnErr("cause", cause).Msg(d.Source + ": undeliverable message moved to its group's DLQ")
				return ToDLQ, nil
			case !IsPermanent(err):
				return 0, fmt.Errorf("%s: move to %s: %w", d.Source, dlq, err)
			}
			// The DLQ refuses it too: the log takes it.
		}
	}
	rec := DeadLetter{
		Source: d.Source, Reason: cause.Error(), Topic: m.Topic, QueueID: m.QueueID, From: from,
		Flag: m.Flag, SysFlag: m.SysFlag, ReconsumeTimes: m.ReconsumeTimes, BornTimestamp: m.BornTimestamp,
		Properties: props, Body: m.Body,
	}
	clk := d.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	rec.TimeMs = clk.Now().UnixMilli()
	if err := d.appendRecord(&rec); err != nil {
		return 0, err
	}
	d.Logger.Error().Str("topic", m.Topic).Int64("from", from).Str("uniqKey", props[message.PropUniqKey]).Str("log", d.Path).
		AnErr("cause", cause).Msg(d.Source + ": undeliverable message written to the dead-letter log")
	return ToDeadLetterLog, nil
}

func (d *Diverter) appendRecord(rec *DeadLetter) error {
	if d.Path == "" {
		return errors.New(d.Source + ": no dead-letter log configured")
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("%s: encode dead letter: %w", d.Source, err)
	}
	line = append(line, '\n')
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(d.Path), 0o755); err != nil {
		return fmt.Errorf("%s: dead-letter log: %w", d.Source, err)
	}
	fs := OrOS(d.FS)
	f, err := fs.OpenFile(d.Path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: dead-letter log: %w", d.Source, err)
	}
	if _, err := fs.Write(f, line); err != nil {
		f.Close()
		return fmt.Errorf("%s: write dead-letter log: %w", d.Source, err)
	}
	if err := fs.Sync(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: sync dead-letter log: %w", d.Source, err)
	}
	return f.Close()
}

// ReadDeadLetters returns the records of a dead-letter log (a torn last line,
// from a crash while appending, is ignored).
func ReadDeadLetters(path string) ([]DeadLetter, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []DeadLetter
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		if i == len(b) {
			break // no newline: torn
		}
		var rec DeadLetter
		if err := json.Unmarshal(b[:i], &rec); err != nil {
			return out, fmt.Errorf("dead-letter log %s: %w", path, err)
		}
		out = append(out, rec)
		b = b[i+1:]
	}
	return out, nil
}
