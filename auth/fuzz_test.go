package auth

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rmqio/rmq/remoting"
)

// FuzzMetadataFile: any auth.json either loads or is refused; a loaded one
// writes back and loads again with the same users.
func FuzzMetadataFile(f *testing.F) {
	f.Add([]byte(`{"users":[{"username":"u","password":"p","userType":"Normal","userStatus":"enable"}],"acls":[{"subject":"User:u","policies":[{"policyType":"Custom","entries":[{"resource":"Topic:t*","actions":["Pub"],"decision":"Allow"}]}]}]}`))
	f.Add([]byte(`{"users":null,"acls":[{"policies":[{"entries":[{}]}]}]}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		path := filepath.Join(t.TempDir(), FileName)
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		md, err := OpenMetadata(nil, path)
		if err != nil {
			return
		}
		n := len(md.ListUsers(""))
		if err := md.change(func(map[string]User, map[string]Acl) error { return nil }); err != nil {
			t.Fatal(err)
		}
		md2, err := OpenMetadata(nil, path)
		if err != nil {
			t.Fatalf("rewritten file does not load: %v", err)
		}
		if len(md2.ListUsers("")) != n {
			t.Fatalf("users %d then %d", n, len(md2.ListUsers("")))
		}
	})
}

// FuzzProcessors: any header value and body for 3001-3010 gets an answer
// with a stock code, never a panic.
func FuzzProcessors(f *testing.F) {
	f.Add(int32(3001), "u", []byte(`{"password":"p","userType":"Super"}`))
	f.Add(int32(3006), "User:u", []byte(`{"policies":[{"entries":[{"resource":"*","actions":["All"],"sourceIps":["1.2.3.0/24"],"decision":"Deny"}]}]}`))
	f.Add(int32(3008), "User:u", []byte(nil))
	f.Add(int32(3010), "", []byte("{bad"))
	f.Fuzz(func(t *testing.T, code int32, v string, body []byte) {
		s, err := Open(Config{AuthenticationMetadataProvider: "l", AuthorizationMetadataProvider: "l"}, t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		s.md.CreateUser(User{Username: "u", Password: "p"})
		h := s.Processors()[3001+((code%10)+10)%10]
		ext := map[string]string{"username": v, "subject": v, "resource": v, "policyType": v, "filter": v, "subjectFilter": v, "resourceFilter": v}
		resp := h(remoting.NewRequest(code, ext, body))
		switch resp.Code {
		case remoting.Success, remoting.SystemError, remoting.NoPermission, remoting.InvalidParameter:
		default:
			t.Fatalf("code %d", resp.Code)
		}
	})
}
