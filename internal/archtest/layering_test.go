package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// rule is one line of the README's layering block.
type rule struct {
	line  int
	from  string   // package or pattern
	allow []string // packages or patterns it may import
}

// match reports whether pkg (module-relative) is named by pattern: the path
// itself, or "dir/*" for the direct subpackages of dir.
func match(pattern, pkg string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/*"); ok {
		rest, ok := strings.CutPrefix(pkg, dir+"/")
		return ok && rest != "" && !strings.Contains(rest, "/")
	}
	return pattern == pkg
}

// parseLayering reads the fenced block after "### Layering" in readme.
func parseLayering(readme []byte) ([]rule, error) {
	sc := bufio.NewScanner(bytes.NewReader(readme))
	var rules []rule
	state := 0 // 0 looking for the heading, 1 for the fence, 2 inside
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch state {
		case 0:
			if line == "### Layering" {
				state = 1
			}
		case 1:
			if strings.HasPrefix(line, "```") {
				state = 2
			}
		case 2:
			if strings.HasPrefix(line, "```") {
				return rules, nil
			}
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			from, to, ok := strings.Cut(line, "->")
			if !ok {
				return nil, fmt.Errorf("README.md:%d: no \"->\" in %q", n, line)
			}
			r := rule{line: n, from: strings.TrimSpace(from)}
			if to = strings.TrimSpace(to); to != "(none)" {
				for _, p := range strings.Split(to, ",") {
					if p = strings.TrimSpace(p); p != "" {
						r.allow = append(r.allow, p)
					}
				}
			}
			rules = append(rules, r)
		}
	}
	return nil, fmt.Errorf("README.md: no fenced block after \"### Layering\"")
}

// checkRulesAcyclic fails when the rules themselves let a package reach itself.
func checkRulesAcyclic(rules []rule, pkgs []string) error {
	edges := map[string][]string{}
	for _, p := range pkgs {
		for _, r := range rules {
			if !match(r.from, p) {
				continue
			}
			for _, q := range pkgs {
				for _, a := range r.allow {
					if q != p && match(a, q) {
						edges[p] = append(edges[p], q)
					}
				}
			}
		}
	}
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var path []string
	var visit func(string) error
	visit = func(p string) error {
		color[p] = grey
		path = append(path, p)
		for _, q := range edges[p] {
			switch color[q] {
			case grey:
				return fmt.Errorf("the layering allows a cycle: %s -> %s", strings.Join(path, " -> "), q)
			case white:
				if err := visit(q); err != nil {
					return err
				}
			}
		}
		path = path[:len(path)-1]
		color[p] = black
		return nil
	}
	for _, p := range pkgs {
		if color[p] == white {
			if err := visit(p); err != nil {
				return err
			}
		}
	}
	return nil
}

type listedPackage struct {
	ImportPath string
	Imports    []string
}

func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}\t{{.Path}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	dir, module, _ = strings.Cut(strings.TrimSpace(string(out)), "\t")
	return dir, module
}

func listPackages(t *testing.T, root string) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -json ./...: %v", err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// nestedPackages lists the packages of the repository's other modules
// (integration/go.mod, bench/compare/go.mod, ...: directories below root
// with a go.mod of their own), whose import paths sit under rmq's. They are
// read from their source, not with go list, so that the check needs none of
// their requirements (the stock clients) in the module cache. A directory
// with .go files is a package; its non-test files, whatever their build
// constraints, give its imports.
func nestedPackages(t *testing.T, root string) []listedPackage {
	t.Helper()
	skipDir := func(name string) bool {
		return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
			name == "testdata" || name == "node_modules" || name == "target"
	}
	// The nested modules and their paths.
	modules := map[string]string{} // dir -> module path
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && skipDir(d.Name()) {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "go.mod" && filepath.Dir(path) != root {
			modules[filepath.Dir(path)] = modulePath(t, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []listedPackage
	for modDir, modPath := range modules {
		byDir := map[string]map[string]bool{}
		err := filepath.WalkDir(modDir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != modDir && skipDir(d.Name()) {
					return filepath.SkipDir
				}
				if _, nested := modules[path]; nested && path != modDir {
					return filepath.SkipDir // its own module, listed on its own
				}
				return nil
			}
			if !strings.HasSuffix(d.Name(), ".go") {
				return nil
			}
			dir := filepath.Dir(path)
			if byDir[dir] == nil {
				byDir[dir] = map[string]bool{} // a package, if only of tests
			}
			if strings.HasSuffix(d.Name(), "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				p, err := strconv.Unquote(imp.Path.Value)
				if err != nil {
					return fmt.Errorf("%s: import %s: %v", path, imp.Path.Value, err)
				}
				byDir[dir][p] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for dir, imports := range byDir {
			rel, err := filepath.Rel(modDir, dir)
			if err != nil {
				t.Fatal(err)
			}
			p := listedPackage{ImportPath: modPath}
			if rel != "." {
				p.ImportPath += "/" + filepath.ToSlash(rel)
			}
			for imp := range imports {
				p.Imports = append(p.Imports, imp)
			}
			sort.Strings(p.Imports)
			pkgs = append(pkgs, p)
		}
	}
	return pkgs
}

// modulePath returns the module path a go.mod file declares.
func modulePath(t *testing.T, gomod string) string {
	t.Helper()
	data, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	t.Fatalf("%s: no module line", gomod)
	return ""
}

// readLayering is the module's root, its path and README.md's layering
// block.
func readLayering(t *testing.T) (root, module string, rules []rule) {
	t.Helper()
	root, module = moduleRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if rules, err = parseLayering(readme); err != nil {
		t.Fatal(err)
	}
	return root, module, rules
}

// TestLayering checks every package's non-test imports against README.md:
// the packages of rmq's module and of the repository's nested modules.
func TestLayering(t *testing.T) {
	root, module, rules := readLayering(t)
	rel := func(importPath string) (string, bool) {
		if importPath == module {
			return ".", true
		}
		return strings.CutPrefix(importPath, module+"/")
	}
	// A library kept under third_party/ (third_party/gnet/RMQ.md) is
	// another project's code in rmq's module: its own imports are its
	// business. What imports it is rmq's, so it is named in the block as a
	// target (third_party/gnet, by remoting alone).
	var listed []listedPackage
	for _, p := range append(listPackages(t, root), nestedPackages(t, root)...) {
		if name, _ := rel(p.ImportPath); !strings.HasPrefix(name, "third_party/") {
			listed = append(listed, p)
		}
	}
	var names []string
	for _, p := range listed {
		if name, ok := rel(p.ImportPath); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if err := checkRulesAcyclic(rules, names); err != nil {
		t.Error(err)
	}
	for _, p := range listed {
		from, _ := rel(p.ImportPath)
		var mine []rule
		for _, r := range rules {
			if match(r.from, from) {
				mine = append(mine, r)
			}
		}
		if len(mine) == 0 {
			t.Errorf("package %s is not covered by README.md's layering block: add a line for it", from)
			continue
		}
		for _, imp := range p.Imports {
			to, ok := rel(imp)
			if !ok {
				continue
			}
			allowed := false
			for _, r := range mine {
				for _, a := range r.allow {
					allowed = allowed || match(a, to)
				}
			}
			if !allowed {
				t.Errorf("%s imports %s, which README.md's layering (line %d) does not allow", from, to, mine[0].line)
			}
		}
	}
}

// TestLayeringCatchesViolations runs the checker on made-up input, so that a
// checker that accepts everything cannot pass.
func TestLayeringCatchesViolations(t *testing.T) {
	readme := []byte("x\n### Layering\n\n```text\n# comment\nstore -> message\nmessage -> (none)\nbroker/* -> store\n```\n")
	rules, err := parseLayering(readme)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 3 || rules[2].from != "broker/*" || len(rules[1].allow) != 0 {
		t.Fatalf("parsed %+v", rules)
	}
	if !match("broker/*", "broker/client") || match("broker/*", "broker") || match("broker/*", "broker/a/b") {
		t.Error("pattern broker/* matches wrongly")
	}
	cyclic := []rule{{from: "a", allow: []string{"b"}}, {from: "b", allow: []string{"a"}}}
	if err := checkRulesAcyclic(cyclic, []string{"a", "b"}); err == nil {
		t.Error("a cycle a -> b -> a was not reported")
	}
	if err := checkRulesAcyclic(rules, []string{"store", "message", "broker/client"}); err != nil {
		t.Errorf("acyclic rules reported: %v", err)
	}
	if _, err := parseLayering([]byte("### Layering\n```\nno arrow\n```\n")); err == nil {
		t.Error("a line without -> was accepted")
	}
}
