package cuda

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var kernelDecl = regexp.MustCompile(`(?s)extern "C" __global__ void (\w+)\(([^)]*)\)`)

// paramKind classifies one C parameter as kernelSigs does.
func paramKind(t *testing.T, kernel, p string) byte {
	p = strings.TrimSpace(p)
	switch {
	case strings.Contains(p, "*"):
		return 'p'
	case strings.HasPrefix(p, "float "):
		return 'f'
	case strings.HasPrefix(p, "double "):
		return 'd'
	case strings.HasPrefix(p, "int "), strings.HasPrefix(p, "unsigned "):
		return 'i'
	}
	t.Fatalf("kernel %s: cannot classify parameter %q", kernel, p)
	return 0
}

// Every kernel declared in the source has the signature launch checks
// against, and every entry of kernelSigs is declared.
func TestKernelSignaturesMatchSource(t *testing.T) {
	declared := map[string]string{}
	for _, m := range kernelDecl.FindAllStringSubmatch(kernelSource, -1) {
		name, params := m[1], m[2]
		if _, dup := declared[name]; dup {
			t.Errorf("kernel %s declared twice", name)
		}
		var sig []byte
		for _, p := range strings.Split(params, ",") {
			sig = append(sig, paramKind(t, name, p))
		}
		declared[name] = string(sig)
	}
	if len(declared) == 0 {
		t.Fatal("no kernel found in the source")
	}
	for name, sig := range kernelSigs {
		got, ok := declared[name]
		if !ok {
			t.Errorf("kernel %s is launched but not defined with extern \"C\" __global__", name)
			continue
		}
		if got != sig {
			t.Errorf("kernel %s: source parameters %q, kernelSigs %q", name, got, sig)
		}
	}
	for name := range declared {
		if _, ok := kernelSigs[name]; !ok {
			t.Errorf("kernel %s is defined but missing from kernelSigs", name)
		}
	}
}

// The source is balanced (braces, parentheses) and uses nothing NVRTC
// lacks without headers.
func TestKernelSourceWellFormed(t *testing.T) {
	for _, pair := range [][2]string{{"{", "}"}, {"(", ")"}, {"[", "]"}} {
		if o, c := strings.Count(kernelSource, pair[0]), strings.Count(kernelSource, pair[1]); o != c {
			t.Errorf("%d %q but %d %q", o, pair[0], c, pair[1])
		}
	}
	depth := 0
	for i, r := range kernelSource {
		switch r {
		case '{':
			depth++
		case '}':
			depth--
		}
		if depth < 0 {
			t.Fatalf("closing brace without an opening one at byte %d", i)
		}
	}
	for _, banned := range []string{"#include", "printf", "__shfl_sync(", "atomicAdd(double"} {
		if strings.Contains(kernelSource, banned) {
			t.Errorf("source uses %q", banned)
		}
	}
	if !strings.Contains(kernelSource, "#define BLOCK 256") || blockSize != 256 {
		t.Errorf("BLOCK in the source and blockSize = %d disagree", blockSize)
	}
}

// launchCalls finds every b.launch(...) call in src, possibly spread over
// several lines, and returns its argument lists and line numbers.
func launchCalls(src string) (args []string, lines []int) {
	const marker = "b.launch("
	for off := 0; ; {
		i := strings.Index(src[off:], marker)
		if i < 0 {
			return args, lines
		}
		start := off + i + len(marker)
		depth, end := 1, start
		for end < len(src) && depth > 0 {
			switch src[end] {
			case '(':
				depth++
			case ')':
				depth--
			}
			end++
		}
		args = append(args, src[start:end-1])
		lines = append(lines, strings.Count(src[:start], "\n")+1)
		off = end
	}
}

// Every launch site in the Go files names a kernel of kernelSigs with the
// right number of arguments, and every kernel is launched somewhere.
func TestLaunchSitesMatchSignatures(t *testing.T) {
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	launched := map[string]bool{}
	calls := 0
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), ".go") || strings.HasSuffix(f.Name(), "_test.go") {
			continue
		}
		src, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		argLists, lines := launchCalls(string(src))
		for i, a := range argLists {
			if strings.HasPrefix(a, "name string") {
				continue // the definition of launch itself
			}
			calls++
			first := strings.SplitN(a, ",", 2)[0]
			name := strings.Trim(first, "\" ")
			launched[name] = true
			sig, ok := kernelSigs[name]
			if !ok {
				t.Errorf("%s:%d launches unknown kernel %s", f.Name(), lines[i], first)
				continue
			}
			// The first three arguments are the kernel name and the grid.
			if n := countArgs(a) - 3; n != len(sig) {
				t.Errorf("%s:%d: %s gets %d arguments, its signature %q has %d", f.Name(), lines[i], name, n, sig, len(sig))
			}
		}
	}
	if calls < len(kernelSigs) {
		t.Fatalf("found %d launch sites for %d kernels", calls, len(kernelSigs))
	}
	var unused []string
	for name := range kernelSigs {
		if !launched[name] {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("kernels never launched: %v", unused)
	}
}

// countArgs counts top-level comma-separated expressions.
func countArgs(s string) int {
	depth, n := 0, 1
	for _, r := range s {
		switch r {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				n++
			}
		}
	}
	return n
}

// Every embedded .cu file is joined into the program exactly once, the
// prelude first: a new file left out of kernelOrder would never compile.
func TestKernelOrderCoversEveryFile(t *testing.T) {
	entries, err := kernelFiles.ReadDir("kernels")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]int{}
	for _, name := range kernelOrder {
		listed[name]++
	}
	for _, e := range entries {
		if listed[e.Name()] != 1 {
			t.Errorf("kernels/%s appears %d times in kernelOrder, want once", e.Name(), listed[e.Name()])
		}
		delete(listed, e.Name())
	}
	for name := range listed {
		t.Errorf("kernelOrder names %s, which is not embedded", name)
	}
	if kernelOrder[0] != "prelude.cu" {
		t.Errorf("kernelOrder starts with %s; the prelude must come first", kernelOrder[0])
	}
}
