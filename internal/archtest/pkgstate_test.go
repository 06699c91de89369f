package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// Two brokers in one process must be independent (issue 43): a lock, a
// once, an atomic or a sync.Map at package level in the broker or one of
// the services it assembles is state every broker of the process shares,
// as the UPDATE_BROKER_CONFIG lock once was. Such state belongs to an
// instance (a field of the Broker, Store, service or Options). Read-only
// tables and buffer pools (sync.Pool, bufpool) are not state a broker can
// change and stay allowed.
var instanceStateDirs = []string{"broker", "store", "timer", "schedule", "namesrv"}

// packageStateAllowed names "file:var" with its reason.
var packageStateAllowed = map[string]string{
	// The machine's RAM, read once from /proc/meminfo: a fact of the host,
	// the same for every broker, which no broker changes.
	"broker/pull.go:physMemOnce": "host fact, read once",
}

// sharedStateTypes are the types whose package-level variables are shared
// mutable state.
var sharedStateTypes = map[string]bool{
	"sync.Mutex": true, "sync.RWMutex": true, "sync.Once": true, "sync.WaitGroup": true, "sync.Cond": true, "sync.Map": true,
}

func TestNoPackageLevelSharedState(t *testing.T) {
	root, _ := moduleRoot(t)
	fset := token.NewFileSet()
	err := walkGoSources(root, []string{"integration", "bench"}, func(rel string, src []byte) error {
		if !inDirs(rel, instanceStateDirs) {
			return nil
		}
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, v := range packageStateVars(f) {
			if packageStateAllowed[rel+":"+v.name] == "" {
				t.Errorf("%s:%d: package-level %s %s is shared by every broker of the process; make it a field of an instance", rel, fset.Position(v.pos).Line, v.name, v.typ)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPackageStateVarsFindsEachForm keeps the detector honest.
func TestPackageStateVarsFindsEachForm(t *testing.T) {
	src := `package p

var mu sync.Mutex
var (
	once sync.Once
	n    atomic.Int64
	m    = &sync.RWMutex{}
	sm   = sync.Map{}
)
var table = map[string]bool{"a": true}
var pool = sync.Pool{New: func() any { return nil }}
var limit = 4

func f() { var local sync.Mutex; _ = local }
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range packageStateVars(f) {
		got = append(got, v.name)
	}
	if fmt.Sprint(got) != "[mu once n m sm]" {
		t.Fatalf("found %v, want [mu once n m sm]", got)
	}
}

type stateVar struct {
	name, typ string
	pos       token.Pos
}

// packageStateVars lists f's package-level variables of a sharedStateTypes
// type or an atomic type, declared or built by a composite literal.
func packageStateVars(f *ast.File) []stateVar {
	var out []stateVar
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, name := range vs.Names {
				typ := typeName(vs.Type)
				if typ == "" && i < len(vs.Values) {
					typ = literalType(vs.Values[i])
				}
				if sharedStateTypes[typ] || strings.HasPrefix(typ, "atomic.") {
					out = append(out, stateVar{name: name.Name, typ: typ, pos: name.Pos()})
				}
			}
		}
	}
	return out
}

// typeName is "pkg.Name" of a selector type (generic arguments dropped).
func typeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			return id.Name + "." + x.Sel.Name
		}
	case *ast.IndexExpr:
		return typeName(x.X)
	case *ast.IndexListExpr:
		return typeName(x.X)
	}
	return ""
}

// literalType is the type of T{...} or &T{...}.
func literalType(e ast.Expr) string {
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	if c, ok := e.(*ast.CompositeLit); ok {
		return typeName(c.Type)
	}
	return ""
}

func inDirs(rel string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	return false
}
