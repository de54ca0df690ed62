package resnet18_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/model/resnet18"
)

// A saved model loads back bit for bit into a network of another seed, and a
// network of another width refuses it, naming --width.
func TestSaveLoadRoundTrip(t *testing.T) {
	b := cpu.New()
	cfg := resnet18.Config{Width: 0.125, ProjDim: 16, InputSize: 32}
	src := resnet18.New(b, cfg, 1)
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := src.Save(path, map[string]string{"width": "0.125"}); err != nil {
		t.Fatal(err)
	}
	dst := resnet18.New(b, cfg, 2)
	f, err := dst.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["width"] != "0.125" {
		t.Errorf("metadata width %q, want 0.125", f.Metadata["width"])
	}
	want, got := make([]float32, src.Params().Len()), make([]float32, dst.Params().Len())
	b.Download(want, src.Params().Flat())
	b.Download(got, dst.Params().Flat())
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("parameter %d: loaded %v, saved %v", i, got[i], want[i])
		}
	}
	wide := resnet18.New(b, resnet18.Config{Width: 0.25, ProjDim: 16, InputSize: 32}, 1)
	if _, err := wide.Load(path); err == nil || !strings.Contains(err.Error(), "--width") {
		t.Errorf("loading a width-0.125 model into width 0.25: error %v, want one naming --width", err)
	}
}
