package archtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// walkGoSources calls fn with the slash path relative to root and the text
// of every non-test .go file below root, in lexical order. It does not go
// into third_party/ (another project's code), dot directories,
// node_modules, or the directories skip names (slash paths relative to
// root).
func walkGoSources(root string, skip []string, fn func(rel string, src []byte) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(rel, "third_party") || strings.HasPrefix(rel, ".") && rel != "." || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			for _, s := range skip {
				if rel == s {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return fn(rel, src)
	})
}
