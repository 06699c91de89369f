package namesrv

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// ErrRegisterBody marks a REGISTER_BROKER body that cannot be decoded.
var ErrRegisterBody = errors.New("namesrv: bad register broker body")

// maxCompressedField bounds one length-prefixed field of the compressed body,
// so a corrupt length cannot make us allocate more than a frame could carry.
const maxCompressedField = 16 << 20

// decodeRegisterBody decodes a RegisterBrokerBody, JSON or (compressed=true)
// the zlib form drawn in doc.go.
func decodeRegisterBody(b []byte, compressed bool) (*remoting.RegisterBrokerBody, error) {
	if !compressed {
		var body remoting.RegisterBrokerBody
		if err := fastjson.Unmarshal(b, &body); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRegisterBody, err)
		}
		return &body, nil
	}
	zr, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: zlib: %w", ErrRegisterBody, err)
	}
	defer zr.Close()

	body := &remoting.RegisterBrokerBody{}
	w := &body.TopicConfigSerializeWrapper
	w.TopicConfigTable = make(map[string]*topicgroup.TopicConfig)

	dv, err := readField(zr, "dataVersion")
	if err != nil {
		return nil, err
	}
	if err := fastjson.Unmarshal(dv, &w.DataVersion); err != nil {
		return nil, fmt.Errorf("%w: dataVersion: %w", ErrRegisterBody, err)
	}
	n, err := readInt32(zr, "topic count")
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("%w: negative topic count %d", ErrRegisterBody, n)
	}
	for i := int32(0); i < n; i++ {
		line, err := readField(zr, "topic config")
		if err != nil {
			return nil, err
		}
		tc, err := decodeTopicConfigLine(string(line))
		if err != nil {
			return nil, err
		}
		w.TopicConfigTable[tc.TopicName] = tc
	}
	fs, err := readField(zr, "filterServerList")
	if err != nil {
		return nil, err
	}
	// Java logs and carries on with an empty list when this JSON is bad.
	if err := fastjson.Unmarshal(fs, &body.FilterServerList); err != nil {
		body.FilterServerList = []string{}
	}
	// A J5 broker appends static-topic mapping entries here; they are not used.
	return body, nil
}

func readInt32(r io.Reader, what string) (int32, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrRegisterBody, what, err)
	}
	return int32(binary.BigEndian.Uint32(b[:])), nil
}

func readField(r io.Reader, what string) ([]byte, error) {
	n, err := readInt32(r, what+" length")
	if err != nil {
		return nil, err
	}
	if n < 0 || n > maxCompressedField {
		return nil, fmt.Errorf("%w: %s length %d", ErrRegisterBody, what, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRegisterBody, what, err)
	}
	return b, nil
}

// decodeTopicConfigLine parses TopicConfig.encode(): "name read write perm
// filterType", followed in J5 by " {attributes json}". topicSysFlag and order
// are not carried, so they decode as zero.
func decodeTopicConfigLine(line string) (*topicgroup.TopicConfig, error) {
	parts := strings.SplitN(line, " ", 6)
	if len(parts) < 5 {
		return nil, fmt.Errorf("%w: topic config %q has %d fields, want 5", ErrRegisterBody, line, len(parts))
	}
	var nums [3]int32
	for i, s := range parts[1:4] {
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%w: topic config %q: %w", ErrRegisterBody, line, err)
		}
		nums[i] = int32(v)
	}
	switch parts[4] {
	case "SINGLE_TAG", "MULTI_TAG":
	default:
		return nil, fmt.Errorf("%w: topic config %q: unknown topicFilterType %q", ErrRegisterBody, line, parts[4])
	}
	if parts[0] == "" {
		return nil, fmt.Errorf("%w: topic config %q: empty topic name", ErrRegisterBody, line)
	}
	return &topicgroup.TopicConfig{
		TopicName: parts[0], ReadQueueNums: nums[0], WriteQueueNums: nums[1], Perm: nums[2], TopicFilterType: parts[4],
	}, nil
}
