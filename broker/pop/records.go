package pop

import (
	"encoding/json"
	"fmt"
)

// Tags of the records on the revive topic (doc.go).
const (
	tagCheckpoint = "ck"
	tagAck        = "ack"
	tagDone       = "done"
	tagTrigger    = "rv"
)

// ckKey names one checkpoint: what a handle's extraInfo carries (the real
// topic comes from the request topic and the retry flag).
type ckKey struct {
	Topic   string `json:"t"`
	Group   string `json:"c"`
	QueueID int32  `json:"q"`
	Start   int64  `json:"so"`
	PopTime int64  `json:"pt"`
}

func (k ckKey) String() string {
	return fmt.Sprintf("%s@%s@%d@%d@%d", k.Topic, k.Group, k.QueueID, k.Start, k.PopTime)
}

func (k ckKey) queue() queueKey { return queueKey{k.Topic, k.Group, k.QueueID} }

// ckRecord is the body of a "ck" record: one pop of one queue.
type ckRecord struct {
	ckKey
	Invisible int64   `json:"it"`
	Offsets   []int64 `json:"o"`
	// Next is the queue offset the pop read up to (GetMessage's
	// nextBeginOffset): the queue's pop cursor after this pop.
	Next  int64 `json:"nb"`
	Order bool  `json:"od,omitempty"`
	// Counts are the delivery attempts of orderly messages (parallel to
	// Offsets; absent for ordinary pops).
	Counts []int32 `json:"cn,omitempty"`
}

// ackRecord ("ack") marks offsets of a checkpoint consumed.
type ackRecord struct {
	ckKey
	Offsets []int64 `json:"ao"`
}

// doneRecord ("done") closes a checkpoint after its revive. Rewind is the
// cursor an orderly queue went back to (-1 for ordinary checkpoints).
type doneRecord struct {
	ckKey
	Rewind int64 `json:"rw"`
}

// triggerRecord ("rv") is the timer message due when the checkpoint's
// invisible time ends.
type triggerRecord struct {
	ckKey
}

func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("pop: marshal %T: %v", v, err)) // plain structs: cannot fail
	}
	return b
}
