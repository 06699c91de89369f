package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"testing"
)

// A request's custom header is decoded once, into a typed header of
// remoting (remoting/headers*.go, remoting.DecodeHeader), with the stock
// field names, required fields and number parsing; a processor that named an
// extFields key itself could spell it, or its required-ness, differently
// from the one decode. TestNoLiteralHeaderReads keeps such reads out of
// non-test code: an index read of a Command's ExtFields or Ext() (directly
// or through a variable holding them), and the field readers of
// remoting.Header (Str, Int64, Int32, Bool, Has, OptStr, OptInt64) on a
// Command's Header() (directly, through a variable, or a *remoting.Header
// parameter). Ranging over the fields, copying them or writing them is not a
// read by name and stays allowed.
//
// headerReadAllowed names the files (or "file:function") that may still do
// it, each with its reason.
var headerReadAllowed = map[string]string{
	// The package that defines Command, the codec and the typed headers.
	"remoting/": "the typed headers and their decoder",
	// The ACL validator reads the SessionCredentials fields (AccessKey,
	// Signature) that any request may carry, whatever its code, as
	// PlainAccessValidator.parse does; they are no request code's header.
	"acl/manager.go:Check":          "ACL credentials of every request",
	"acl/processors.go:adminCaller": "ACL credentials of every request",
	// The same for ACL 2.0: the credentials, and the authorization context
	// that pulls each request code's resources out of its fields, as 5.3.3's
	// DefaultAuthorizationContextBuilder reads the raw ext fields (as
	// acl/perm.go's requestResources does for ACL 1.0).
	"auth/authn.go:RemotingCredential": "ACL 2.0 credentials of every request",
	"auth/service.go:hasAccessKey":     "ACL 2.0 credentials of every request",
	"auth/processors.go:notSuperLogin": "ACL 2.0 credentials of every request",
	"auth/actions.go:Requests":         "ACL 2.0 resources of every request code",
	// A test helper (not a processor) asserting on a response field the
	// test names.
	"internal/testutil/brokertest/brokertest.go": "test support",
}

// headerReaders are the methods of remoting.Header that read a field by name.
var headerReaders = []string{"Str", "Int64", "Int32", "Bool", "Has", "OptStr", "OptInt64"}

func TestNoLiteralHeaderReads(t *testing.T) {
	root, _ := moduleRoot(t)
	fset := token.NewFileSet()
	// integration and bench are modules of their own (their stock-client
	// code serves no rmq request).
	err := walkGoSources(root, []string{"integration", "bench"}, func(rel string, src []byte) error {
		if headerReadAllowed[rel] != "" || headerReadAllowed[path.Dir(rel)+"/"] != "" {
			return nil
		}
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, r := range literalHeaderReads(fset, f) {
			if headerReadAllowed[rel+":"+r.fn] != "" {
				continue
			}
			t.Errorf("%s:%d: %s reads a header field by name (%s); decode the code's typed header (remoting.DecodeHeader) instead", rel, r.line, r.fn, r.what)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLiteralHeaderReadsFindsEachForm keeps the detector honest: each form
// of a read by name is found, and the allowed forms are not.
func TestLiteralHeaderReadsFindsEachForm(t *testing.T) {
	src := `package p

func bad(req *remoting.Command, h0 *remoting.Header) {
	_ = req.ExtFields["topic"]
	_ = req.Ext()["topic"]
	ext := req.Ext()
	_, _ = ext[key]
	h := req.Header()
	_ = h.Str("topic", true)
	_ = h.Int64("queueOffset", true, 0)
	_ = req.Header().Bool("order")
	_ = h0.Has("group")
	var m = req.ExtFields
	_ = m["x"]
}

func good(req *remoting.Command, w http.ResponseWriter, log zerolog.Logger) {
	req.ExtFields["topic"] = "t"
	for k, v := range req.Ext() {
		_, _ = k, v
	}
	w.Header().Set("a", "b")
	log.Info().Str("topic", "t").Int64("n", 1).Bool("b", true)
	hd, err := remoting.DecodeHeader[remoting.TopicRequestHeader](req)
	_, _ = hd.Topic, err
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range literalHeaderReads(fset, f) {
		got = append(got, fmt.Sprintf("%s:%d", r.fn, r.line))
	}
	want := []string{"bad:4", "bad:5", "bad:7", "bad:9", "bad:10", "bad:11", "bad:12", "bad:14"}
	if !slices.Equal(got, want) {
		t.Fatalf("found %v, want %v", got, want)
	}
}

type headerRead struct {
	line int
	fn   string
	what string
}

// literalHeaderReads finds the reads by name in f's functions.
func literalHeaderReads(fset *token.FileSet, f *ast.File) []headerRead {
	var out []headerRead
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		out = append(out, funcHeaderReads(fset, fd)...)
	}
	return out
}

func funcHeaderReads(fset *token.FileSet, fd *ast.FuncDecl) []headerRead {
	extVars, hdrVars := map[string]bool{}, map[string]bool{}
	for _, field := range fd.Type.Params.List {
		if isHeaderPointer(field.Type) {
			for _, n := range field.Names {
				hdrVars[n.Name] = true
			}
		}
	}
	written := map[ast.Expr]bool{}
	bind := func(lhs []ast.Expr, rhs []ast.Expr) {
		if len(lhs) != len(rhs) {
			return
		}
		for i, l := range lhs {
			id, ok := l.(*ast.Ident)
			if !ok {
				continue
			}
			switch {
			case isExtSource(rhs[i], nil):
				extVars[id.Name] = true
			case isHeaderCall(rhs[i]):
				hdrVars[id.Name] = true
			}
		}
	}
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				written[l] = true
			}
			bind(n.Lhs, n.Rhs)
		case *ast.ValueSpec:
			lhs := make([]ast.Expr, len(n.Names))
			for i, id := range n.Names {
				lhs[i] = id
			}
			bind(lhs, n.Values)
		}
		return true
	})
	var out []headerRead
	add := func(n ast.Node, what string) {
		out = append(out, headerRead{line: fset.Position(n.Pos()).Line, fn: fd.Name.Name, what: what})
	}
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IndexExpr:
			if !written[n] && isExtSource(n.X, extVars) {
				add(n, "an extFields index")
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || !slices.Contains(headerReaders, sel.Sel.Name) {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && hdrVars[id.Name] || isHeaderCall(sel.X) {
				add(n, "Header()."+sel.Sel.Name)
			}
		}
		return true
	})
	return out
}

// isExtSource reports whether e is X.ExtFields, X.Ext() or a variable
// holding one of them.
func isExtSource(e ast.Expr, vars map[string]bool) bool {
	switch e := e.(type) {
	case *ast.SelectorExpr:
		return e.Sel.Name == "ExtFields"
	case *ast.CallExpr:
		sel, ok := e.Fun.(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "Ext" && len(e.Args) == 0
	case *ast.Ident:
		return vars[e.Name]
	case *ast.ParenExpr:
		return isExtSource(e.X, vars)
	}
	return false
}

// isHeaderCall reports whether e is X.Header() with X not an
// http.ResponseWriter-like value; Header() of net/http has no field readers
// of these names, so any X.Header() that they are called on is a Command's.
func isHeaderCall(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok || len(c.Args) != 0 {
		return false
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Header"
}

// isHeaderPointer reports whether t is *remoting.Header.
func isHeaderPointer(t ast.Expr) bool {
	st, ok := t.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := st.X.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Header" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "remoting"
}
