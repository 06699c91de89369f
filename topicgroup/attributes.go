package topicgroup

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rmqio/rmq/message"
)

// topicAttribute is one attribute a topic may carry (common/attribute
// Attribute): whether an existing topic may change it, and its check.
type topicAttribute struct {
	changeable bool
	verify     func(value string) error
}

// topicAttributes are the attributes rmq takes: message.type, changeable, one
// of TopicMessageType (TopicAttributes.TOPIC_MESSAGE_TYPE_ATTRIBUTE). The
// other 5.x attributes (queue.type, cleanup.policy, reserve.time) select
// stores rmq does not have and are refused as unsupported keys.
var topicAttributes = map[string]topicAttribute{
	message.AttrMessageType: {changeable: true, verify: func(v string) error {
		if !message.ValidTopicMessageType(v) {
			names := make([]string, len(message.TopicMessageTypes))
			for i, t := range message.TopicMessageTypes {
				names[i] = string(t)
			}
			return fmt.Errorf("value is not in set: [%s]", strings.Join(names, ", "))
		}
		return nil
	}},
}

// The errors of ParseAttributeModification and AlterAttributes carry the
// stock RuntimeException messages of AttributeParser / AttributeUtil, which
// UPDATE_AND_CREATE_TOPIC answers as the remark of a SYSTEM_ERROR.

// ParseAttributeModification reads the attributes header of
// UPDATE_AND_CREATE_TOPIC (AttributeParser.parseToMap): comma-separated
// "+key=value" (add or alter) and "-key" (delete) items, keys kept with
// their sign.
func ParseAttributeModification(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		key, value, hasValue := strings.Cut(kv, "=")
		switch {
		case hasValue && !strings.Contains(key, "+"):
			return nil, fmt.Errorf("add/alter attribute format is wrong: %s", key)
		case hasValue && (value == "" || strings.Contains(value, "=")):
			return nil, fmt.Errorf("add/alter attribute format is wrong: %s", kv)
		case !hasValue && !strings.Contains(key, "-"):
			return nil, fmt.Errorf("delete attribute format is wrong: %s", key)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("key duplication: %s", key)
		}
		out[key] = value
	}
	return out, nil
}

// AlterAttributes applies a parsed modification to a topic's current
// attributes (AttributeUtil.alterCurrentAttributes): a new topic takes only
// "+" items; an existing one adds, alters and deletes; every key must be
// known, a changed one changeable, a value valid. current is not modified.
func AlterAttributes(create bool, current, mod map[string]string) (map[string]string, error) {
	out := maps.Clone(current)
	if out == nil {
		out = map[string]string{}
	}
	seen := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(mod)) {
		value := mod[key]
		if len(key) < 2 {
			return nil, errors.New("kv string format wrong")
		}
		sign, name := key[0], key[1:]
		if strings.ContainsAny(name, "+-") {
			return nil, errors.New("kv string format wrong")
		}
		if seen[name] {
			return nil, fmt.Errorf("alter duplication key. key: %s", name)
		}
		seen[name] = true
		attr, known := topicAttributes[name]
		_, exists := current[name]
		switch {
		case create && sign != '+':
			return nil, fmt.Errorf("only add attribute is supported while creating topic. key: %s", name)
		case sign != '+' && sign != '-':
			return nil, fmt.Errorf("wrong format key: %s", name)
		case sign == '-' && !exists:
			return nil, fmt.Errorf("attempt to delete a nonexistent key: %s", name)
		case !known:
			return nil, fmt.Errorf("unsupported key: %s", name)
		case !create && !attr.changeable:
			return nil, fmt.Errorf("attempt to update an unchangeable attribute. key: %s", name)
		}
		if sign == '-' {
			delete(out, name)
			continue
		}
		if err := attr.verify(value); err != nil {
			return nil, err
		}
		out[name] = value
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
