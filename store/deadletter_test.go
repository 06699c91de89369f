package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqio/rmq/message"
)

func TestIsPermanent(t *testing.T) {
	for _, err := range []error{ErrMessageTooLarge, ErrPropertiesTooLarge, ErrTopicTooLong, ErrInvalidTopic, ErrInvalidBatch, ErrHostNotIPv4} {
		if !IsPermanent(fmt.Errorf("wrapped: %w", err)) {
			t.Errorf("%v: not permanent", err)
		}
	}
	for _, err := range []error{ErrClosed, ErrDiskFull, errors.New("io"), nil} {
		if IsPermanent(err) {
			t.Errorf("%v: permanent", err)
		}
	}
}

func TestDiverterDLQThenLog(t *testing.T) {
	dir := t.TempDir()
	var puts []*message.Message
	putErr := error(nil)
	d := &Diverter{Source: "test", Path: filepath.Join(dir, "deadletter", "test.log"),
		Put: func(m *message.Message) (*PutResult, error) {
			if putErr != nil {
				return nil, putErr
			}
			puts = append(puts, m)
			return &PutResult{}, nil
		}}
	cause := fmt.Errorf("deliver: %w", ErrTopicTooLong)
	// A retry message whose DLQ fits goes there, DELAY dropped.
	m := &message.Message{Topic: message.RetryTopic(strings.Repeat("g", 121)), QueueID: 3, Body: []byte("a"),
		Properties: map[string]string{"DELAY": "3", "UNIQ_KEY": "K1"}}
	if where, err := d.Divert(m, 10, cause); err != nil || where != ToDLQ {
		t.Fatalf("Divert = %v %v", where, err)
	}
	if len(puts) != 1 || puts[0].Topic != message.DLQTopic(strings.Repeat("g", 121)) || puts[0].Properties["DELAY"] != "" || m.Properties["DELAY"] != "3" {
		t.Fatalf("DLQ put %+v", puts)
	}
	// A transient DLQ failure is reported for a retry; a permanent one falls
	// to the log, as do messages without a group and DLQs too long.
	putErr = ErrDiskFull
	if _, err := d.Divert(m, 10, cause); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("transient DLQ failure: %v", err)
	}
	putErr = ErrMessageTooLarge
	for i, topic := range []string{m.Topic, "Plain", message.RetryTopic(strings.Repeat("g", 125))} {
		mm := &message.Message{Topic: topic, Body: []byte{byte('x' + i)}, RawProperties: message.MarshalProperties(map[string]string{"UNIQ_KEY": "K"})}
		if where, err := d.Divert(mm, int64(i), cause); err != nil || where != ToDeadLetterLog {
			t.Fatalf("%s: Divert = %v %v", topic, where, err)
		}
	}
	// A torn last line (a crash while appending) is ignored.
	f, err := os.OpenFile(d.Path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"timeMs":1,"sou`)
	f.Close()
	dl, err := ReadDeadLetters(d.Path)
	if err != nil || len(dl) != 3 || dl[1].Topic != "Plain" || string(dl[1].Body) != "y" || dl[1].Properties["UNIQ_KEY"] != "K" ||
		dl[1].From != 1 || dl[1].Source != "test" || !strings.Contains(dl[1].Reason, "too long") {
		t.Fatalf("dead letters %+v %v", dl, err)
	}
}

// A write or sync of the dead-letter log that fails (Diverter.FS) fails the
// Divert, so the caller keeps the message and retries; once the fault is
// gone the record is written.
func TestDiverterLogFault(t *testing.T) {
	for _, op := range []Op{OpOpen, OpWrite, OpSync} {
		t.Run(op.String(), func(t *testing.T) {
			inj := &Injector{}
			d := &Diverter{Source: "test", Path: filepath.Join(t.TempDir(), "deadletter", "test.log"), FS: NewErrorFS(inj),
				Put: func(*message.Message) (*PutResult, error) { return nil, ErrMessageTooLarge }}
			m := &message.Message{Topic: "Plain", Body: []byte("x")}
			inj.Add(Rule{Op: op, Path: "test.log"})
			if _, err := d.Divert(m, 7, ErrMessageTooLarge); !errors.Is(err, ErrInjected) {
				t.Fatalf("Divert with a faulty log: %v", err)
			}
			inj.Clear()
			if where, err := d.Divert(m, 7, ErrMessageTooLarge); err != nil || where != ToDeadLetterLog {
				t.Fatalf("Divert once the fault is gone: %v %v", where, err)
			}
			dl, err := ReadDeadLetters(d.Path)
			if err != nil || len(dl) == 0 || dl[len(dl)-1].From != 7 {
				t.Fatalf("dead letters %+v %v", dl, err)
			}
		})
	}
}
