package fastjson

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Entry is one entry of a Java map whose keys are not strings.
type Entry[K, V any] struct {
	Key   K
	Value V
}

// Entries decodes a normalized Java map with non-string keys, in the order
// of the body. Each key string is itself read as JSON into K, so it works for
// object keys, which Normalize turns into strings holding the object's JSON,
// and for number keys ("0" reads as 0):
//
//	var body struct {
//		OffsetTable fastjson.Entries[remoting.MessageQueue, OffsetWrapper] `json:"offsetTable"`
//	}
//	err := fastjson.Unmarshal(respBody, &body)
//
// A key that is not K's JSON (a plain string key such as "T@G") is an error.
// null decodes as nil.
type Entries[K, V any] []Entry[K, V]

// UnmarshalJSON implements json.Unmarshaler for standard JSON, i.e. after
// Normalize.
func (es *Entries[K, V]) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		*es = nil
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("fastjson: map entries: want an object, got %v", tok)
	}
	out := Entries[K, V]{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string) // a key token is always a string
		var e Entry[K, V]
		if err := json.Unmarshal([]byte(key), &e.Key); err != nil {
			return fmt.Errorf("fastjson: map key %q: %w", key, err)
		}
		if err := dec.Decode(&e.Value); err != nil {
			return fmt.Errorf("fastjson: map value of %q: %w", key, err)
		}
		out = append(out, e)
	}
	*es = out
	return nil
}
