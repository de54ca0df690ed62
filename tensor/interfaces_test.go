package tensor

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxMethods is the most methods an interface of the package may declare
// itself: Backend is composed of small interfaces, one per kind of work,
// so that a package can ask for the part it uses and a new kernel joins a
// small interface or becomes a capability of its own.
const maxMethods = 12

// interfaceSizes maps each interface type declared in src to the number
// of methods it declares itself and the interfaces it embeds.
func interfaceSizes(t *testing.T, fset *token.FileSet, name string, src any) (own map[string]int, embeds map[string][]string) {
	t.Helper()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	own, embeds = map[string]int{}, map[string][]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		it, ok := ts.Type.(*ast.InterfaceType)
		if !ok {
			return true
		}
		own[ts.Name.Name] = 0
		for _, m := range it.Methods.List {
			if len(m.Names) == 0 { // an embedded interface
				if id, ok := m.Type.(*ast.Ident); ok {
					embeds[ts.Name.Name] = append(embeds[ts.Name.Name], id.Name)
				}
				continue
			}
			own[ts.Name.Name] += len(m.Names)
		}
		return true
	})
	return own, embeds
}

func TestEveryInterfaceIsSmall(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	own, embeds := map[string]int{}, map[string][]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		o, e := interfaceSizes(t, fset, name, nil)
		for k, v := range o {
			own[k] = v
		}
		for k, v := range e {
			embeds[k] = v
		}
	}
	for name, n := range own {
		if n > maxMethods {
			t.Errorf("interface %s declares %d methods: split it into interfaces of at most %d", name, n, maxMethods)
		}
	}
	// Backend is the union of the small interfaces and declares nothing
	// of its own; its method set is theirs (33 kernels and queries).
	if own["Backend"] != 0 || len(embeds["Backend"]) < 2 {
		t.Errorf("Backend declares %d methods and embeds %v: it should only compose the small interfaces", own["Backend"], embeds["Backend"])
	}
	total := 0
	for _, e := range embeds["Backend"] {
		total += own[e]
	}
	if total != 33 {
		t.Errorf("Backend's parts declare %d methods, want the 33 every backend implements (a new kernel that not every backend has is a capability, capability.go)", total)
	}
}

// The counter itself, on an interface of known size.
func TestInterfaceSizesCounts(t *testing.T) {
	src := "package x\ntype Small interface{ A(); B(); C(); D() }\ntype Big interface{ Small; E() }\n"
	own, embeds := interfaceSizes(t, token.NewFileSet(), "x.go", src)
	if own["Small"] != 4 || own["Big"] != 1 || len(embeds["Big"]) != 1 || embeds["Big"][0] != "Small" {
		t.Errorf("own %v, embeds %v; want Small 4, Big 1 embedding Small", own, embeds)
	}
}
