package message

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateTopic(t *testing.T) {
	for _, tc := range []struct {
		topic, remark string
	}{
		{"TopicTest", ""},
		{"%RETRY%g_1|x-y", ""},
		{strings.Repeat("t", MaxTopicLength), ""},
		{"", "The specified topic is blank."},
		{"  ", "The specified topic is blank."},
		{"../../../evil", "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"},
		{"a b", "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"},
		{"tópico", "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"},
		{strings.Repeat("t", MaxTopicLength+1), "The specified topic is longer than topic max length."},
	} {
		err := ValidateTopic(tc.topic)
		if tc.remark == "" {
			if err != nil {
				t.Errorf("ValidateTopic(%q) = %v, want nil", tc.topic, err)
			}
			continue
		}
		var ne *NameError
		if !errors.As(err, &ne) || ne.Remark != tc.remark || err.Error() != tc.remark || !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidateTopic(%q) = %v, want %q", tc.topic, err, tc.remark)
		}
	}
}

func TestValidateGroup(t *testing.T) {
	long := strings.Repeat("g", 125)
	for _, tc := range []struct {
		group, remark, retryRemark string
	}{
		{"please_rename_unique_group_name", "", ""},
		{strings.Repeat("g", MaxTopicLength-len(RetryTopicPrefix)), "", ""},
		{long, "", "The specified topic is longer than topic max length."},
		{strings.Repeat("g", MaxGroupLength), "", "The specified topic is longer than topic max length."},
		{"", "the specified group is blank", ""},
		{strings.Repeat("g", MaxGroupLength+1), "the specified group is longer than group max length 255.", ""},
		{"../../../evil_grp", "the specified group[../../../evil_grp] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$", ""},
	} {
		err := ValidateGroup(tc.group)
		if got := remarkOf(err); got != tc.remark {
			t.Errorf("ValidateGroup(%.20q…) = %q, want %q", tc.group, got, tc.remark)
		}
		want := tc.remark
		if want == "" {
			want = tc.retryRemark
		}
		if got := remarkOf(ValidateRetryGroup(tc.group)); got != want {
			t.Errorf("ValidateRetryGroup(%.20q…) = %q, want %q", tc.group, got, want)
		}
	}
}

func remarkOf(err error) string {
	if err == nil {
		return ""
	}
	if !errors.Is(err, ErrInvalidName) {
		return "not a name error: " + err.Error()
	}
	return err.Error()
}
