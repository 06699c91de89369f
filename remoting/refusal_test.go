package remoting

import (
	"errors"
	"fmt"
	"testing"
)

// A refusal, wrapped or not, answers with its code and remark; anything
// else is SYSTEM_ERROR with the error's text.
func TestRefusalResponse(t *testing.T) {
	req := NewRequest(SendMessageV2, nil, nil)
	cause := errors.New("cause")
	r := &Refusal{Code: NoPermission, Remark: "forbidden", Cause: cause}
	for _, tc := range []struct {
		err    error
		code   int32
		remark string
	}{
		{r, NoPermission, "forbidden"},
		{fmt.Errorf("wrapped: %w", r), NoPermission, "forbidden"},
		{Refusef(MessageIllegal, "bad %d", 1), MessageIllegal, "bad 1"},
		{errors.New("boom"), SystemError, "boom"},
	} {
		resp := RefusalResponse(req, tc.err)
		if resp.Code != tc.code || resp.Remark != tc.remark {
			t.Errorf("%v: %d %q, want %d %q", tc.err, resp.Code, resp.Remark, tc.code, tc.remark)
		}
	}
	if !errors.Is(r, cause) || r.Error() != "forbidden" || AsRefusal(cause) != nil {
		t.Errorf("Refusal: Is(cause)=%t Error()=%q", errors.Is(r, cause), r.Error())
	}
}
