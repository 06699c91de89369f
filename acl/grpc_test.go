package acl

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"
)

// The stock DefaultAuthenticationContextBuilderTest vector: the hex
// signature becomes the base64 that Sign returns.
func TestParseAuthorizationStockVector(t *testing.T) {
	ak, hasKey, sig, hasSig, err := parseAuthorization("MQv2-HMAC-SHA1 Credential=abc, SignedHeaders=x-mq-date-time, Signature=D18A9CBCDDBA9041D6693268FEF15A989E64430B")
	if err != nil || !hasKey || !hasSig || ak != "abc" || sig != "0YqcvN26kEHWaTJo/vFamJ5kQws=" {
		t.Fatalf("got %q %v %q %v %v", ak, hasKey, sig, hasSig, err)
	}
}

func TestParseAuthorizationMalformed(t *testing.T) {
	for _, h := range []string{
		"MQv2-HMAC-SHA1",                            // no key-values
		"MQv2-HMAC-SHA1 Credential",                 // a key without '='
		"MQv2-HMAC-SHA1 Credential=a,, x=y",         // an empty item
		"MQv2-HMAC-SHA1 Credential=//",              // no credential part
		"MQv2-HMAC-SHA1 Credential=a, Signature=zz", // not hex
	} {
		if _, _, _, _, err := parseAuthorization(h); err == nil {
			t.Errorf("%q parsed", h)
		}
	}
}

// goSDKAuthorization is the header the 5.x Go SDK sends (golang/client.go):
// a lower-case hex signature, the credential "AK//rocketmq".
func goSDKAuthorization(ak, sk, dateTime string) string {
	h := hmac.New(sha1.New, []byte(sk))
	h.Write([]byte(dateTime))
	return "MQv2-HMAC-SHA1 Credential=" + ak + "//rocketmq, SignedHeaders=x-mq-date-time, Signature=" + hex.EncodeToString(h.Sum(nil))
}

func TestCheckGrpc(t *testing.T) {
	m, _, _ := openFile(t, stockFile)
	const dt = "20231227T194619Z"
	need := func(build func(*Need)) *Need { n := &Need{}; build(n); return n }
	pubA := need(func(n *Need) { n.Topic("topicA", PermPub) })
	pubB := need(func(n *Need) { n.Topic("topicB", PermPub) })
	subC := need(func(n *Need) { n.Topic("topicC", PermSub); n.Group("groupC", PermSub) })
	subCgroupA := need(func(n *Need) { n.Topic("topicC", PermSub); n.Group("groupA", PermSub) })
	cases := []struct {
		name, remote, auth, dt string
		need                   *Need
		want                   string // "" allowed, else the refusal's message prefix
	}{
		{"no credentials", "1.2.3.4:5", "", "", pubB, "No accessKey is configured"},
		{"global white, no credentials", "192.168.0.7:5", "", "", pubA, ""},
		{"unknown key", "1.2.3.4:5", SignGrpc("nobody12", "12345678", dt), dt, pubB, "No acl config for nobody12"},
		{"wrong secret", "1.2.3.4:5", SignGrpc("RocketMQ", "87654321", dt), dt, pubB, "Check signature failed for accessKey=RocketMQ"},
		{"other date", "1.2.3.4:5", SignGrpc("RocketMQ", "12345678", dt), "20231227T194620Z", pubB, "Check signature failed"},
		{"no signature", "1.2.3.4:5", "MQv2-HMAC-SHA1 Credential=RocketMQ, SignedHeaders=x-mq-date-time", dt, pubB, "Check signature failed"},
		{"malformed", "192.168.0.7:5", "MQv2-HMAC-SHA1", dt, pubB, "authorization header is incorrect"},
		{"topic DENY", "1.2.3.4:5", SignGrpc("RocketMQ", "12345678", dt), dt, pubA, "No default permission for topic:topicA"},
		{"topic PUB", "1.2.3.4:5", SignGrpc("RocketMQ", "12345678", dt), dt, pubB, ""},
		{"go SDK form", "1.2.3.4:5", goSDKAuthorization("RocketMQ", "12345678", dt), dt, pubB, ""},
		{"topic and group SUB", "1.2.3.4:5", SignGrpc("RocketMQ", "12345678", dt), dt, subC, ""},
		{"group DENY", "1.2.3.4:5", SignGrpc("RocketMQ", "12345678", dt), dt, subCgroupA, "No default permission for group:groupA"},
		{"account white, no signature", "192.168.1.9:5", "MQv2-HMAC-SHA1 Credential=rocketmq2", dt, pubA, ""},
		{"admin anywhere", "1.2.3.4:5", SignGrpc("rocketmq2", "12345678", dt), dt, pubA, ""},
	}
	for _, c := range cases {
		err := m.CheckGrpc(c.remote, c.auth, c.dt, c.need)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
		if _, ok := err.(*Denied); err != nil && !ok {
			t.Errorf("%s: %T is not a *Denied", c.name, err)
		}
	}
}

// FuzzParseAuthorization: any header parses or is refused, never panics;
// a parsed signature is base64 of the hex it came from.
func FuzzParseAuthorization(f *testing.F) {
	f.Add("MQv2-HMAC-SHA1 Credential=abc, SignedHeaders=x-mq-date-time, Signature=D18A9CBCDDBA9041D6693268FEF15A989E64430B")
	f.Add("MQv2-HMAC-SHA1 Credential=ak//rocketmq, SignedHeaders=x-mq-date-time, Signature=00")
	f.Add("MQv2-HMAC-SHA1 Credential=//,")
	f.Add("x ,,=")
	f.Fuzz(func(t *testing.T, h string) {
		ak, hasKey, _, _, err := parseAuthorization(h)
		if err != nil && (ak != "" || hasKey) {
			t.Fatalf("refused %q but named %q", h, ak)
		}
		m, _, _ := openFile(t, stockFile)
		if cerr := m.CheckGrpc("1.2.3.4:5", h, "20231227T194619Z", &Need{}); cerr != nil {
			if _, ok := cerr.(*Denied); !ok {
				t.Fatalf("%q: %T", h, cerr)
			}
		}
	})
}
