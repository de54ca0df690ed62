package synthdata

import (
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// ImageFolder writes a tiny image-folder data set under a test's temporary
// folder (ROOT/{train,test}/{red,blue}/*.png: two classes of 16x16 PNGs,
// one reddish and one bluish, nTrain and nTest images split evenly) and
// returns ROOT, for commands that read `folder:ROOT` from disk. The same
// arguments give the same pixels.
func ImageFolder(t testing.TB, nTrain, nTest int) string {
	t.Helper()
	root := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	for _, split := range []struct {
		name string
		n    int
	}{{"train", nTrain}, {"test", nTest}} {
		for c, class := range []string{"red", "blue"} {
			dir := filepath.Join(root, split.name, class)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < split.n/2; i++ {
				img := image.NewRGBA(image.Rect(0, 0, 16, 16))
				for p := 0; p < 256; p++ {
					v := uint8(r.IntN(120))
					col := color.RGBA{R: 100 + v, G: v, B: v / 2, A: 255}
					if c == 1 {
						col = color.RGBA{R: v / 2, G: v, B: 100 + v, A: 255}
					}
					img.Set(p%16, p/16, col)
				}
				f, err := os.Create(filepath.Join(dir, string(rune('a'+i%26))+string(rune('a'+i/26))+".png"))
				if err != nil {
					t.Fatal(err)
				}
				if err := png.Encode(f, img); err != nil {
					f.Close()
					t.Fatal(err)
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return root
}
