package train

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of the trainer may be, from its
// func line to its closing brace: one page, so that a contributor reads a
// step of training (the loop, setup, a checkpoint) whole.
const maxFuncLines = 80

// longFuncs lists the functions of one Go source longer than limit lines,
// as "file:line name (n lines)".
func longFuncs(fset *token.FileSet, name string, src any, limit int) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var long []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
		if n := end.Line - start.Line + 1; n > limit {
			long = append(long, fmt.Sprintf("%s:%d %s (%d lines)", filepath.Base(name), start.Line, fd.Name.Name, n))
		}
	}
	return long, nil
}

// TestNoFunctionOverAPage checks every non-test source file of the package
// (tests' tables are data and may run longer).
func TestNoFunctionOverAPage(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		long, err := longFuncs(fset, name, src, maxFuncLines)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range long {
			t.Errorf("%s: split it into steps of at most %d lines", l, maxFuncLines)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked %d source files; the package has more (run from its folder)", checked)
	}
}

// TestLongFuncsCounts checks the counter itself on functions of known
// length, so that the test above cannot pass by counting wrong.
func TestLongFuncsCounts(t *testing.T) {
	body := func(n int) string { // a function of n lines
		return "func f() {\n" + strings.Repeat("\t_ = 0\n", n-2) + "}\n"
	}
	for _, tc := range []struct {
		lines int
		long  bool
	}{{3, false}, {80, false}, {81, true}, {200, true}} {
		long, err := longFuncs(token.NewFileSet(), "x.go", "package x\n"+body(tc.lines), maxFuncLines)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(long) == 1; got != tc.long {
			t.Errorf("a function of %d lines: reported %v, want long=%v", tc.lines, long, tc.long)
		} else if tc.long && !strings.Contains(long[0], fmt.Sprintf("(%d lines)", tc.lines)) {
			t.Errorf("a function of %d lines reported as %q", tc.lines, long[0])
		}
	}
}
