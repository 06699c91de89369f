package brokeradmin

import (
	"strings"
	"testing"
)

// FuzzDecodeTopicList: UPDATE_AND_CREATE_TOPIC_LIST's body decoder never
// panics; it either refuses with a remark or returns configs with a known
// filter type.
func FuzzDecodeTopicList(f *testing.F) {
	for _, s := range []string{
		`{"topicConfigList":[{"topicName":"T","readQueueNums":2,"attributes":{"+message.type":"FIFO"}}]}`, `{"topicConfigList":[]}`,
		`{}`, ``, `null`, `{"topicConfigList":[null]}`, `{"topicConfigList":[{"topicFilterType":"SQL"}]}`,
		`{"topicConfigList":` + strings.Repeat("[", 100), `{"topicConfigList":[{"perm":"x"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		list, bad := decodeTopicList(b)
		if bad == "" && list == nil {
			t.Fatalf("%q: neither configs nor a refusal", b)
		}
		for _, tc := range list {
			if tc == nil || (tc.TopicFilterType != filterTypeSingleTag && tc.TopicFilterType != filterTypeMultiTag) {
				t.Fatalf("%q: config %+v", b, tc)
			}
		}
	})
}
