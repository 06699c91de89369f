package timer

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadRecallHandle is returned (wrapped) by DecodeRecallHandle.
var ErrBadRecallHandle = errors.New("timer: illegal recall handle")

const recallHandleVersion = "v1"

// EncodeRecallHandle builds the stock recall handle: URL-safe base64, with
// padding, of "v1 <topic> <brokerName> <timestampMs> <uniqKey>".
func EncodeRecallHandle(topic, brokerName string, timestampMs int64, uniqKey string) string {
	s := recallHandleVersion + " " + topic + " " + brokerName + " " + strconv.FormatInt(timestampMs, 10) + " " + uniqKey
	return base64.URLEncoding.EncodeToString([]byte(s))
}

// DecodeRecallHandle parses a handle made by EncodeRecallHandle (or a stock
// 5.x broker). Padding may be left out, as Java's URL decoder allows. Any other
// shape is ErrBadRecallHandle.
func DecodeRecallHandle(h string) (topic, brokerName string, timestampMs int64, uniqKey string, err error) {
	if h == "" {
		return "", "", 0, "", fmt.Errorf("%w: empty", ErrBadRecallHandle)
	}
	raw, derr := base64.URLEncoding.DecodeString(h)
	if derr != nil {
		raw, derr = base64.RawURLEncoding.DecodeString(h)
	}
	if derr != nil {
		return "", "", 0, "", fmt.Errorf("%w: not URL-safe base64: %v", ErrBadRecallHandle, derr)
	}
	fields := strings.Split(string(raw), " ")
	if len(fields) < 5 || fields[0] != recallHandleVersion {
		return "", "", 0, "", fmt.Errorf("%w: want \"v1 <topic> <brokerName> <timestampMs> <uniqKey>\", got %q", ErrBadRecallHandle, raw)
	}
	for i, f := range fields[1:5] {
		if f == "" {
			return "", "", 0, "", fmt.Errorf("%w: field %d is empty in %q", ErrBadRecallHandle, i+1, raw)
		}
	}
	ts, perr := strconv.ParseInt(fields[3], 10, 64)
	if perr != nil {
		return "", "", 0, "", fmt.Errorf("%w: timestamp %q is not a number", ErrBadRecallHandle, fields[3])
	}
	return fields[1], fields[2], ts, fields[4], nil
}
