package acl

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/rmqio/rmq/internal/javastr"
)

// The 5.x SDKs sign every gRPC call in its metadata (rocketmq-clients
// Signature.java, golang/client.go): x-mq-date-time is the signing time and
// authorization is
//
//	MQv2-HMAC-SHA1 Credential=<AccessKey>[/...], SignedHeaders=x-mq-date-time, Signature=<hex>
//
// where the signature is HmacSHA1 of the date-time value keyed with the
// secret key, in hex (the Java SDK upper case, the Go SDK lower case).
const (
	GrpcAuthorization = "authorization"
	GrpcDateTime      = "x-mq-date-time"
)

// Need is what a gRPC request touches, as PlainAccessResource.parse
// (GeneratedMessageV3, AuthenticationHeader) of the 5.x acl module collects
// it: topics by name, groups as their retry topics.
type Need struct{ r resources }

// Topic adds topic with the permission perm (PermPub, PermSub, PermAny).
func (n *Need) Topic(topic string, perm byte) { n.r.add(topic, true, perm) }

// Group adds group with the permission perm.
func (n *Need) Group(group string, perm byte) { n.r.addGroup(group, true, perm) }

// Refuse makes the request fail its parse with msg, as the stock parse
// throws an AclException for a request it cannot read (a SendMessage
// without messages, a consumer heartbeat without a group).
func (n *Need) Refuse(msg string) *Denied { return &Denied{Msg: msg, frame: frameGrpcParse} }

// frameGrpcParse is the stock throw site of a gRPC request that does not
// parse (rocketmq-acl 5.x).
const frameGrpcParse = "org.apache.rocketmq.acl.plain.PlainAccessResource.parse(PlainAccessResource.java)"

// CheckGrpc decides one gRPC request from remote ("ip:port") with the
// metadata values authorization and dateTime ("" when absent), as the 5.x
// proxy's AuthenticationInterceptor runs PlainAccessValidator: the
// authorization header is parsed first (a malformed one is refused even
// from a white address), then the checks are those of Check, the signature
// being the date-time's.
func (m *Manager) CheckGrpc(remote, authorization, dateTime string, need *Need) error {
	var ak, sig string
	var hasKey, hasSig bool
	if authorization != "" {
		var err error
		if ak, hasKey, sig, hasSig, err = parseAuthorization(authorization); err != nil {
			return &Denied{Msg: err.Error(), frame: frameGrpcParse}
		}
	}
	var r resources
	if need != nil {
		r = need.r
	}
	// No gRPC request maps to an admin code (the proxy's RequestMapping).
	return m.validate(remote, 0, ak, hasKey, func(secretKey string) bool {
		if !hasSig {
			return false
		}
		want := Sign([]byte(dateTime), secretKey)
		return hmac.Equal([]byte(want), []byte(sig))
	}, r)
}

// parseAuthorization reads the authorization header as the 5.x
// AuthorizationHeader does: "<method> k=v, k=v, ...", Credential's first
// "/"-separated part the AccessKey, Signature hex turned into the base64
// that Sign returns. Java's String.split drops trailing empty strings,
// which decides when a credential has no part at all.
func parseAuthorization(h string) (ak string, hasKey bool, sig string, hasSig bool, err error) {
	_, rest, ok := strings.Cut(h, " ") // the method is not checked
	if !ok {
		return "", false, "", false, fmt.Errorf("authorization header is incorrect")
	}
	for _, kvs := range javaSplit(rest) {
		k, v, ok := strings.Cut(javastr.Trim(kvs), "=")
		if !ok {
			return "", false, "", false, fmt.Errorf("authorization keyValues length is incorrect, actual length=1")
		}
		switch k {
		case "Credential":
			parts := javaSplitOn(v, "/")
			if len(parts) == 0 {
				return "", false, "", false, fmt.Errorf("authorization credential length is incorrect, actual length=0")
			}
			ak, hasKey = parts[0], true
		case "Signature":
			raw, err := hex.DecodeString(v)
			if err != nil {
				return "", false, "", false, fmt.Errorf("authorization signature is not hex: %v", err)
			}
			sig, hasSig = base64.StdEncoding.EncodeToString(raw), true
		}
	}
	return ak, hasKey, sig, hasSig, nil
}

// javaSplitOn is javaSplit (processors.go) on any literal separator:
// Java's String.split drops trailing empty strings, and a value without
// the separator is one element (even when empty).
func javaSplitOn(s, sep string) []string {
	parts := strings.Split(s, sep)
	if len(parts) == 1 {
		return parts
	}
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// SignGrpc is the authorization value a 5.x SDK sends for dateTime (the
// Java SDK's form; tests and tools use it).
func SignGrpc(accessKey, secretKey, dateTime string) string {
	raw, _ := base64.StdEncoding.DecodeString(Sign([]byte(dateTime), secretKey))
	return "MQv2-HMAC-SHA1 Credential=" + accessKey + ", SignedHeaders=" + GrpcDateTime + ", Signature=" + strings.ToUpper(hex.EncodeToString(raw))
}
