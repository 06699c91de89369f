package message

// TagsHash is Java String.hashCode of tag, widened to int64: h = 31*h + c over
// the UTF-16 code units, with int32 overflow. It is the consume-queue tagsCode of
// a message with that TAGS property; "" hashes to 0. Invalid UTF-8 bytes count as
// U+FFFD (range over a string yields it), as Java's decoder would produce.
func TagsHash(tag string) int64 {
	return int64(HashAppend(0, tag))
}

// HashAppend continues the Java String.hashCode h of some text over s: the
// hash of a concatenation is HashAppend(HashAppend(0, a), b), with no string
// built.
func HashAppend(h int32, s string) int32 {
	for _, r := range s {
		if r > 0xFFFF {
			// Supplementary code point: a UTF-16 surrogate pair.
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}
