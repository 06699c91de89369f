package remoting

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strconv"
	"strings"
	"testing"
)

// notCodes are int32 constants of this package that are not request or
// response codes.
var notCodes = map[string]bool{"FlagResponse": true, "FlagOneway": true}

// stockless are code constants the 5.3.3 tables name differently or not at
// all, with why; their label is then the table's name or the number.
var stockless = map[string]string{
	// 4.9.8's plain-ACL failure codes: 5.3.3 gives 209-211 to pop and
	// consumer codes (polling_full, ...), which win.
	"UpdateAndCreateACLConfigFailed":     "4.9.8 ACL",
	"DeleteACLConfigFailed":              "4.9.8 ACL",
	"UpdateGlobalWhiteAddrsConfigFailed": "4.9.8 ACL",
}

func squash(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }

// TestEveryCodeConstantIsNamed: every request and response code constant of
// this package is in the generated stock table (5.3.3, or 4.9.8 for a code
// 5.3.3 dropped) under its own name (the Go
// name is the Java field name in camel case), so the metrics labels and error
// texts never fall back to a number for a code rmq knows.
func TestEveryCodeConstantIsNamed(t *testing.T) {
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, s := range gd.Specs {
					vs := s.(*ast.ValueSpec)
					if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "int32" || len(vs.Values) != len(vs.Names) {
						continue
					}
					for i, name := range vs.Names {
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok || notCodes[name.Name] || !name.IsExported() {
							continue
						}
						v, err := strconv.ParseInt(lit.Value, 0, 32)
						if err != nil {
							t.Fatalf("%s = %s: %v", name.Name, lit.Value, err)
						}
						n++
						code := int32(v)
						rn, _ := RequestCodeText(code)
						sn, _ := ResponseCodeText(code)
						if squash(rn) == squash(name.Name) || squash(sn) == squash(name.Name) {
							if _, ok := stockless[name.Name]; ok {
								t.Errorf("%s is in the stock table after all: drop it from stockless", name.Name)
							}
							continue
						}
						if _, ok := stockless[name.Name]; !ok {
							t.Errorf("%s = %d has no stock name (request table: %q, response table: %q)",
								name.Name, code, RequestCodeName(code), ResponseCodeName(code))
						}
					}
				}
			}
		}
	}
	if n < 100 {
		t.Fatalf("found only %d code constants: the parse missed some", n)
	}
}

func TestCodeNames(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{RequestCodeName(SendMessageV2), "send_message_v2"},
		{RequestCodeName(PopMessage), "pop_message"},
		{RequestCodeName(1014), "1014"}, // a short field of RequestCode: not in the Java map either
		{RequestCodeName(-5), "-5"},
		// 4.9.8's plain-ACL codes: named in texts, numbers in the labels (5.3.3 has none).
		{RequestCodeName(UpdateAndCreateACLConfig), "50"},
		{func() string { n, _ := RequestCodeText(UpdateAndCreateACLConfig); return n }(), "update_and_create_acl_config"},
		{ResponseCodeName(Success), "success"},
		{ResponseCodeName(TopicNotExist), "topic_not_exist"},
		{ResponseCodeName(99999), "99999"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
