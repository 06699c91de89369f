package acl

import (
	"testing"

	"github.com/rmqio/rmq/remoting"
)

// Signatures computed by the 4.9.8 AclClientRPCHook (rocketmq-acl-4.9.8.jar,
// doBeforeRequest on a request with these ext fields and body).
func TestSignRequestMatchesJavaAclClientRPCHook(t *testing.T) {
	cases := []struct {
		name, ak, sk, token string
		ext                 map[string]string
		body                string
		want                string
	}{
		{"no fields, no body", "RocketMQ", "12345678", "", nil, "", "IUc8rrO/0gDch8CjObLQsW2rsiA="},
		{"send v2", "RocketMQ", "12345678", "", map[string]string{
			"a": "pg", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1700000000000",
			"h": "0", "i": "KEYS\x01k1\x02", "j": "0", "k": "false", "m": "false",
		}, "Hello RocketMQ", "g3kNFmt2IoaQymKulkM8k/hVXd4="},
		{"utf-8", "rocketmq2", "abcdefgh", "", map[string]string{"topic": "主题", "consumerGroup": "gé"}, "über", "jhlvv/I7U5iR+hJTNHex/uOrmUk="},
		{"security token", "RocketMQ", "12345678", "tok123", map[string]string{"topic": "T"}, "x", "nVNbGXGoQd1dwfjNMSgE3Yk8BPo="},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := remoting.NewRequest(remoting.SendMessage, nil, nil)
			for k, v := range c.ext {
				req.SetExt(k, v)
			}
			if c.body != "" {
				req.Body = []byte(c.body)
			}
			SignRequest(req, c.ak, c.sk, c.token)
			if got := req.Ext()[FieldSignature]; got != c.want {
				t.Fatalf("signature %q, Java computed %q", got, c.want)
			}
		})
	}
}

func TestJavaCompareIsUTF16Order(t *testing.T) {
	// In UTF-8 bytes U+FF5E (EF BD 9E) sorts before U+1F600 (F0 9F ...); in
	// UTF-16 the surrogate 0xD83D sorts before 0xFF5E, so Java's TreeMap
	// puts the emoji first.
	a, b := "\U0001F600", "\uFF5E"
	if javaCompare(a, b) >= 0 {
		t.Fatalf("javaCompare(%q, %q) >= 0, want < 0 (UTF-16 order)", a, b)
	}
	if a < b {
		t.Fatalf("Go byte order should differ here")
	}
	if javaCompare("AccessKey", "a") >= 0 || javaCompare("b", "a") <= 0 || javaCompare("x", "x") != 0 {
		t.Fatal("ASCII order wrong")
	}
}
