package acl

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"slices"
	"unicode/utf16"

	"github.com/rmqio/rmq/remoting"
)

// The ext field names of SessionCredentials.
const (
	FieldAccessKey     = "AccessKey"
	FieldSignature     = "Signature"
	FieldSecurityToken = "SecurityToken"
	// uniqueKeyQueryFlag (MixAll.UNIQUE_MSG_QUERY_FLAG) is left out of the
	// content the broker signs, as PlainAccessValidator.parse leaves it out;
	// the Java client signs it, so a signed unique-key query fails the check
	// on a stock broker too.
	uniqueKeyQueryFlag = "_UNIQUE_KEY_QUERY"
)

// Content is what a request's signature covers (AclUtils.combineRequestContent):
// the values of ext, in the order of their keys as Java's TreeMap sorts
// them (String.compareTo, UTF-16 units), concatenated as UTF-8, then body.
// The keys in skip are left out.
func Content(ext map[string]string, body []byte, skip ...string) []byte {
	keys := make([]string, 0, len(ext))
	n := len(body)
	for k, v := range ext {
		if slices.Contains(skip, k) {
			continue
		}
		keys = append(keys, k)
		n += len(v)
	}
	slices.SortFunc(keys, javaCompare)
	out := make([]byte, 0, n)
	for _, k := range keys {
		out = append(out, ext[k]...)
	}
	return append(out, body...)
}

// Sign is AclSigner.calSignature: base64 of HmacSHA1(content) keyed with
// the UTF-8 bytes of secretKey.
func Sign(content []byte, secretKey string) string {
	mac := hmac.New(sha1.New, []byte(secretKey))
	mac.Write(content)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// SignRequest does what the Java client's AclClientRPCHook does before a
// request leaves: it adds AccessKey (and SecurityToken when not empty) and
// the Signature over every other ext field and the body.
func SignRequest(req *remoting.Command, accessKey, secretKey, securityToken string) {
	req.SetExt(FieldAccessKey, accessKey)
	if securityToken != "" {
		req.SetExt(FieldSecurityToken, securityToken)
	}
	req.SetExt(FieldSignature, Sign(Content(req.Ext(), req.Body, FieldSignature), secretKey))
}

// javaCompare orders strings as Java's String.compareTo does: by UTF-16
// code units, which differs from Go's byte order only past U+FFFF against
// U+E000..U+FFFF.
func javaCompare(a, b string) int {
	if isASCII(a) && isASCII(b) {
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	}
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	return slices.Compare(ua, ub)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
