package auth

import (
	"crypto/subtle"
	"strings"

	"github.com/rmqio/rmq/acl"
	"github.com/rmqio/rmq/remoting"
)

// versionV4_9_3 is MQVersion.Version.V4_9_3.ordinal(): requests of that
// version or older leave _UNIQUE_KEY_QUERY out of the signed content, as
// those clients did.
const versionV4_9_3 = 399

const uniqueKeyQueryFlag = "_UNIQUE_KEY_QUERY"

// Credential is what a request presents: the username (AccessKey or the
// authorization header's Credential), its signature in base64 and the
// content it signs. Username "" means the request carries none.
type Credential struct {
	Username  string
	Signature string
	hasSig    bool
	Content   []byte
}

// RemotingCredential is DefaultAuthenticationContextBuilder.build for a
// remoting request: AccessKey and Signature from the ext fields, the
// content being every other ext value in key order, then the body (the
// signature of 4.x's AclClientRPCHook, acl.Content).
func RemotingCredential(req *remoting.Command) Credential {
	ext := req.Ext()
	ak, ok := ext[acl.FieldAccessKey]
	if !ok {
		return Credential{}
	}
	sig, hasSig := ext[acl.FieldSignature]
	skip := []string{acl.FieldSignature}
	if req.Version <= versionV4_9_3 {
		skip = append(skip, uniqueKeyQueryFlag)
	}
	return Credential{Username: ak, Signature: sig, hasSig: hasSig, Content: acl.Content(ext, req.Body, skip...)}
}

// GrpcCredential is build(Metadata, request) for a gRPC call with the
// authorization and x-mq-date-time values ("" when absent): no
// authorization header is no credential; the content signed is the
// date-time alone (no skew check, as stock).
func GrpcCredential(authorization, dateTime string) (Credential, error) {
	if authorization == "" {
		return Credential{}, nil
	}
	if dateTime == "" {
		return Credential{}, &Denied{Msg: "datetime is null."}
	}
	ak, _, sig, hasSig, err := acl.ParseAuthorization(authorization)
	if err != nil {
		// The same parse as ACL 1.0; 5.3.3 words its failures its own way.
		msg := err.Error()
		switch {
		case strings.HasPrefix(msg, "authorization header"):
			msg = "authentication header is incorrect."
		case strings.HasPrefix(msg, "authorization keyValues"):
			msg = "authentication keyValues length is incorrect, actual length=1."
		case strings.HasPrefix(msg, "authorization credential"):
			msg = "authentication credential length is incorrect, actual length=0."
		default:
			msg = "create authentication context error."
		}
		return Credential{}, &Denied{Msg: msg}
	}
	return Credential{Username: ak, Signature: sig, hasSig: hasSig, Content: []byte(dateTime)}, nil
}

// authenticate is DefaultAuthenticationHandler: the user must exist, be
// enabled and have signed the content with its password.
func (m *Metadata) authenticate(c Credential) error {
	if c.Username == "" {
		return &Denied{Msg: "username cannot be null."}
	}
	u, ok := m.User(c.Username)
	if !ok {
		return denyf("User:%s is not found.", c.Username)
	}
	if u.UserStatus == StatusOff {
		return denyf("User:%s is disabled.", c.Username)
	}
	want := acl.Sign(c.Content, u.Password)
	if !c.hasSig || subtle.ConstantTimeCompare([]byte(want), []byte(c.Signature)) != 1 {
		return &Denied{Msg: "check signature failed."}
	}
	return nil
}
