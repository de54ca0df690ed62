package cuda

import (
	"bytes"
	"os"
	"testing"
)

func TestCacheKey(t *testing.T) {
	base := cacheKey("src", "sm_90", 12, 4, []string{"-a"})
	// A fixed value: the key must not change between runs or builds, or
	// every start would recompile.
	if want := cacheKey("src", "sm_90", 12, 4, []string{"-a"}); base != want {
		t.Fatalf("key not deterministic: %s vs %s", base, want)
	}
	if len(base) != 24 {
		t.Fatalf("key %q has %d characters, want 24", base, len(base))
	}
	const golden = "295b6d0b313d43c1f2cc2474" // cacheKey("src", "sm_90", 12, 4, ["-a"])
	if base != golden {
		t.Errorf("key = %s, want %s (did the key derivation change? update the golden value knowingly)", base, golden)
	}
	variants := map[string]string{
		"source":  cacheKey("src2", "sm_90", 12, 4, []string{"-a"}),
		"arch":    cacheKey("src", "sm_80", 12, 4, []string{"-a"}),
		"major":   cacheKey("src", "sm_90", 13, 4, []string{"-a"}),
		"minor":   cacheKey("src", "sm_90", 12, 5, []string{"-a"}),
		"options": cacheKey("src", "sm_90", 12, 4, []string{"-b"}),
	}
	seen := map[string]string{base: "base"}
	for what, k := range variants {
		if other, dup := seen[k]; dup {
			t.Errorf("changing %s gives the same key as %s", what, other)
		}
		seen[k] = what
	}
}

func TestCacheRoundTrip(t *testing.T) {
	dir := t.TempDir() + "/nested/cubin"
	if _, ok := readCache(dir, "k"); ok {
		t.Fatal("empty cache hit")
	}
	img := []byte("\x7fELF fake cubin")
	writeCache(dir, "k", compiled{image: img, kind: "cubin"})
	got, ok := readCache(dir, "k")
	if !ok || got.kind != "cubin" || !bytes.Equal(got.image, img) {
		t.Fatalf("read back %v %q %q", ok, got.kind, got.image)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("cache folder holds %d files, want 1 (temporary files left?)", len(entries))
	}
	// Caching disabled: nothing written, nothing read.
	writeCache("", "k", compiled{image: img, kind: "cubin"})
	if _, ok := readCache("", "k"); ok {
		t.Fatal("disabled cache hit")
	}
}
