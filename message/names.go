package message

import (
	"errors"
	"fmt"
	"strings"
)

// Name rules for topics and groups, the one place they are kept
// (TopicValidator.validateTopic and Validators.checkGroup in 4.9.8). A name
// that becomes a topic, a group or a file passes these before anything is
// stored: a topic longer than a record can hold, or one that is not a single
// directory name, can never be delivered, and a message that cannot be
// delivered stalls whatever serves it in order.
//
// The errors' text is the stock remark; brokers answer them with
// SYSTEM_ERROR (code 1) and that remark, as TopicValidator does.

// MaxGroupLength is the longest group name (Validators.CHARACTER_MAX_LENGTH).
const MaxGroupLength = 255

// ErrInvalidName is wrapped by every NameError.
var ErrInvalidName = errors.New("message: invalid topic or group name")

// NameError is a name that breaks a rule. Its Error text is the stock remark.
type NameError struct {
	Name   string
	Remark string
}

func (e *NameError) Error() string { return e.Remark }

func (e *NameError) Unwrap() error { return ErrInvalidName }

// validChars is ^[%|a-zA-Z0-9_-]+$ (TopicValidator.VALID_CHAR_BIT_MAP).
func validChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c == '%' || c == '-' || c == '_' || c == '|' ||
			(c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
		if !ok {
			return false
		}
	}
	return true
}

// ValidateTopic applies TopicValidator.validateTopic: not blank, only
// [%|a-zA-Z0-9_-], at most MaxTopicLength characters.
func ValidateTopic(topic string) error {
	switch {
	case strings.TrimSpace(topic) == "":
		return &NameError{Name: topic, Remark: "The specified topic is blank."}
	case !validChars(topic):
		return &NameError{Name: topic, Remark: "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"}
	case len(topic) > MaxTopicLength:
		return &NameError{Name: topic, Remark: "The specified topic is longer than topic max length."}
	}
	return nil
}

// ValidateGroup applies Validators.checkGroup: not blank, at most
// MaxGroupLength characters, only [%|a-zA-Z0-9_-].
func ValidateGroup(group string) error {
	switch {
	case strings.TrimSpace(group) == "":
		return &NameError{Name: group, Remark: "the specified group is blank"}
	case len(group) > MaxGroupLength:
		return &NameError{Name: group, Remark: fmt.Sprintf("the specified group is longer than group max length %d.", MaxGroupLength)}
	case !validChars(group):
		return &NameError{Name: group, Remark: fmt.Sprintf("the specified group[%s] contains illegal characters, allowing only %s", group, "^[%|a-zA-Z0-9_-]+$")}
	}
	return nil
}

// ValidateRetryGroup is ValidateGroup for a group whose retry topic is about
// to be used: %RETRY%<group> must itself be a valid topic, so a group longer
// than MaxTopicLength-len(RetryTopicPrefix) (120) is refused with the topic
// rule's remark.
func ValidateRetryGroup(group string) error {
	if err := ValidateGroup(group); err != nil {
		return err
	}
	return ValidateTopic(RetryTopic(group))
}
