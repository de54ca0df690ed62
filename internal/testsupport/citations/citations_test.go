package citations

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/internal/testsupport/testenv"
)

const definitions = "docs/definitions.md"

var (
	// numbered is a heading "## N. Title", unnumbered one "## Title".
	numbered   = regexp.MustCompile(`(?m)^## (\d+)\. (.+)$`)
	unnumbered = regexp.MustCompile(`(?m)^## ([^0-9].*)$`)
	// A citation by number, with the section's title optionally quoted after
	// it, or by the title of an unnumbered section.
	bySection = regexp.MustCompile(`^,? section (\d+)(?: "([^"]+)")?`)
	byTitle   = regexp.MustCompile(`^, "([^"]+)"`)
	// joins the lines of a comment (and of a raw string) into one.
	lineBreak = regexp.MustCompile(`[ \t]*\n[ \t]*(?://[ \t]*)?`)
	// a specification that is not part of the repository.
	outside = regexp.MustCompile(`\bSPEC\b`)
)

// shortTitle is a heading's title without its trailing parenthesis or
// subtitle: "Pricing and staffing" for "Pricing and staffing: a check with
// a known answer (`examples/pricing`)".
func shortTitle(heading string) string {
	for _, sep := range []string{" (", ": "} {
		if i := strings.Index(heading, sep); i >= 0 {
			heading = heading[:i]
		}
	}
	return strings.TrimSpace(heading)
}

// sections reads the sections of the definitions file: number -> short
// title, and the set of unnumbered sections' short titles.
func sections(defs string) (map[int]string, map[string]bool) {
	byNumber := map[int]string{}
	for _, m := range numbered.FindAllStringSubmatch(defs, -1) {
		n, _ := strconv.Atoi(m[1])
		byNumber[n] = shortTitle(m[2])
	}
	titled := map[string]bool{}
	for _, m := range unnumbered.FindAllStringSubmatch(defs, -1) {
		titled[shortTitle(m[1])] = true
	}
	return byNumber, titled
}

// check returns one line per bad citation in sources (file name -> text)
// against the definitions file's text defs.
func check(defs string, sources map[string]string) []string {
	byNumber, titled := sections(defs)
	var bad []string
	names := make([]string, 0, len(sources))
	for name := range sources {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		text := lineBreak.ReplaceAllString(sources[name], " ")
		for _, loc := range outside.FindAllStringIndex(text, -1) {
			bad = append(bad, fmt.Sprintf("%s: %q cites a specification outside the repository; cite %s, section N \"Title\"", name, excerpt(text, loc[0]), definitions))
		}
		for i := 0; ; {
			j := strings.Index(text[i:], definitions)
			if j < 0 {
				break
			}
			at := i + j
			rest := text[at+len(definitions):]
			i = at + len(definitions)
			if m := bySection.FindStringSubmatch(rest); m != nil {
				n, _ := strconv.Atoi(m[1])
				title, ok := byNumber[n]
				switch {
				case !ok:
					bad = append(bad, fmt.Sprintf("%s: %q: %s has no section %d", name, excerpt(text, at), definitions, n))
				case m[2] != "" && m[2] != title:
					bad = append(bad, fmt.Sprintf("%s: %q: section %d of %s is %q", name, excerpt(text, at), n, definitions, title))
				}
				continue
			}
			if m := byTitle.FindStringSubmatch(rest); m != nil {
				if !titled[m[1]] {
					bad = append(bad, fmt.Sprintf("%s: %q: %s has no unnumbered section %q", name, excerpt(text, at), definitions, m[1]))
				}
				continue
			}
			bad = append(bad, fmt.Sprintf("%s: %q: cite as %s, section N \"Title\" (or %s, \"Title\" for an unnumbered section)", name, excerpt(text, at), definitions, definitions))
		}
	}
	return bad
}

// excerpt is the text around position at, for messages.
func excerpt(text string, at int) string {
	end := min(len(text), at+80)
	return text[at:end]
}

// TestCitationsNameExistingSections checks every Go and CUDA source file of
// the module against docs/definitions.md as it stands, so renumbering a
// section (or adding one before another) fails here until the citations
// follow.
func TestCitationsNameExistingSections(t *testing.T) {
	root := testenv.ModuleRoot(t)
	defs, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(definitions)))
	if err != nil {
		t.Fatal(err)
	}
	if byNumber, _ := sections(string(defs)); len(byNumber) == 0 {
		t.Fatalf("%s has no numbered sections (\"## N. Title\")", definitions)
	}
	sources := map[string]string{}
	cited := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "runs" || d.Name() == "data-cache") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".cu" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if filepath.Dir(rel) == filepath.Join("internal", "testsupport", "citations") {
			return nil // this package describes the form, with examples
		}
		sources[rel] = string(b)
		cited += strings.Count(string(b), definitions)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The code cites the definitions in many places; finding none means
	// the walk missed the sources.
	if cited < 50 {
		t.Fatalf("found %d citations of %s in %d files, expected many more: the walk from %s missed the sources", cited, definitions, len(sources), root)
	}
	for _, line := range check(string(defs), sources) {
		t.Error(line)
	}
}

// TestCheckFindsBadCitations: the checker itself, on a small definitions
// file.
func TestCheckFindsBadCitations(t *testing.T) {
	defs := "# Definitions\n\n## 1. Oracles and levels (package `mlmc`)\n\ntext\n\n## 2. Pricing: a check\n\n## Test data\n"
	const outsideSpec = "SP" + "EC"
	tests := []struct {
		name, src string
		want      string // "" for no complaint
	}{
		{"number", `// see docs/definitions.md, section 1.`, ""},
		{"number and title", `// (docs/definitions.md, section 1 "Oracles and levels")`, ""},
		{"title across lines", "\t// (docs/definitions.md, section 2\n\t// \"Pricing\")", ""},
		{"no comma", `// docs/definitions.md section 2`, ""},
		{"unnumbered", `// docs/definitions.md, "Test data"`, ""},
		{"missing section", `// docs/definitions.md, section 9`, "has no section 9"},
		{"wrong title", `// docs/definitions.md, section 2 "Oracles and levels"`, `section 2 of docs/definitions.md is "Pricing"`},
		{"unknown unnumbered", `// docs/definitions.md, "Group norm"`, `no unnumbered section "Group norm"`},
		{"no section", `// as docs/definitions.md says`, "cite as docs/definitions.md, section N"},
		// Spelt in two pieces so that this file does not itself cite the
		// outside specification.
		{"outside", "// the oracle (" + outsideSpec + " section 2)", "a specification outside the repository"},
		{"identifier", `var libSpec, spec = 1, 2`, ""},
	}
	for _, tc := range tests {
		got := check(defs, map[string]string{"x.go": tc.src})
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: complaints %q, want none", tc.name, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s: complaints %q, want one containing %q", tc.name, got, tc.want)
		}
	}
}
