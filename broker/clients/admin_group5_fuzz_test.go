package clients

import (
	"strings"
	"testing"
)

// FuzzDecodeGroupList: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST's body
// decoder never panics; it either refuses with a remark or returns configs
// that all have the stock defaults under what the body set.
func FuzzDecodeGroupList(f *testing.F) {
	for _, s := range []string{
		`{"groupConfigList":[{"groupName":"G","retryMaxTimes":3}]}`, `{"groupConfigList":[]}`, `{}`, ``, `null`,
		`{"groupConfigList":[null]}`, `{"groupConfigList":[{"groupName":1}]}`, `{"groupConfigList":` + strings.Repeat("[", 100),
		`{groupConfigList:[{groupName:'G'}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfgs, bad := decodeGroupList(b)
		if bad == "" && cfgs == nil {
			t.Fatalf("%q: neither configs nor a refusal", b)
		}
		for _, c := range cfgs {
			if c == nil {
				t.Fatalf("%q: a nil config", b)
			}
		}
	})
}
