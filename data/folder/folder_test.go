package folder

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pix is the test pattern: channel ch of pixel (x,y) of image k.
func pix(k, ch, x, y int) uint8 { return uint8(k*31 + ch*80 + x*5 + y*3) }

func writePNG(t *testing.T, path string, img image.Image) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func pattern(k, w, h int) image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetNRGBA(x, y, color.NRGBA{pix(k, 0, x, y), pix(k, 1, x, y), pix(k, 2, x, y), 255})
		}
	}
	return img
}

// tree writes ROOT/{train,test}/{zebra,ant}/ with PNG patterns numbered k.
func tree(t *testing.T, side int) string {
	root := t.TempDir()
	k := 0
	for _, split := range []string{"train", "test"} {
		for _, class := range []string{"zebra", "ant"} {
			for _, name := range []string{"b.png", "a.PNG"} {
				writePNG(t, filepath.Join(root, split, class, name), pattern(k, side, side))
				k++
			}
		}
	}
	// Linked images count; files and folders that are not images are ignored.
	if err := os.Symlink(filepath.Join(root, "train", "zebra", "a.PNG"), filepath.Join(root, "test", "ant", "link.png")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(root, "nowhere.png"), filepath.Join(root, "test", "ant", "broken.png"))
	os.WriteFile(filepath.Join(root, "train", "ant", "notes.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(root, "train", "README"), []byte("x"), 0o644)
	return root
}

func TestLoadExact(t *testing.T) {
	root := tree(t, 8)
	var first []uint8
	for _, workers := range []int{1, 3} {
		s, err := LoadWorkers(root, 0, workers)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(s.Train.Classes, ","); got != "ant,zebra" {
			t.Fatalf("classes %s, want ant,zebra (sorted)", got)
		}
		if s.Train.Len() != 4 || s.Test.Len() != 5 || s.Train.H != 8 || s.Train.W != 8 {
			t.Fatalf("got %d/%d images of %dx%d", s.Train.Len(), s.Test.Len(), s.Train.H, s.Train.W)
		}
		// Train order: ant/a.PNG (k=3), ant/b.png (k=2), zebra/a.PNG (k=1), zebra/b.png (k=0).
		for i, k := range []int{3, 2, 1, 0} {
			if want := int32(i / 2); s.Train.Labels[i] != want {
				t.Errorf("image %d: label %d, want %d", i, s.Train.Labels[i], want)
			}
			img := s.Train.Image(i)
			for ch := 0; ch < 3; ch++ {
				for y := 0; y < 8; y++ {
					for x := 0; x < 8; x++ {
						if got, want := img[ch*64+y*8+x], pix(k, ch, x, y); got != want {
							t.Fatalf("image %d channel %d (%d,%d): %d, want %d", i, ch, x, y, got, want)
						}
					}
				}
			}
		}
		// Each image names the file it came from, in the same order.
		wantFiles := []string{"ant/a.PNG", "ant/b.png", "zebra/a.PNG", "zebra/b.png"}
		for i, f := range wantFiles {
			if i >= len(s.Train.Files) || s.Train.Files[i] != filepath.Join(root, "train", f) {
				t.Fatalf("train files %v, want %v under %s/train", s.Train.Files, wantFiles, root)
			}
		}
		if len(s.Test.Files) != s.Test.Len() || s.Test.Files[2] != filepath.Join(root, "test", "ant", "link.png") {
			t.Errorf("test files %v", s.Test.Files)
		}
		// Test order starts ant/a.PNG (k=7), ant/b.png (k=6), ant/link.png (zebra's train a.PNG, k=1).
		if !bytes.Equal(s.Test.Image(2), s.Train.Image(2)) || s.Test.Labels[2] != 0 {
			t.Error("linked image not read as the file it points to")
		}
		if first == nil {
			first = s.Train.Pix
		} else if !bytes.Equal(first, s.Train.Pix) {
			t.Error("1 and 3 workers decoded different pixels")
		}
	}
}

func TestResizeAndGray(t *testing.T) {
	root := t.TempDir()
	gray := image.NewGray(image.Rect(0, 0, 64, 48))
	for i := range gray.Pix {
		gray.Pix[i] = 77
	}
	writePNG(t, filepath.Join(root, "train", "c", "0.png"), gray)
	writePNG(t, filepath.Join(root, "test", "c", "0.png"), pattern(0, 16, 16))
	s, err := Load(root, 32)
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.H != 32 || len(s.Train.Pix) != 3*32*32 {
		t.Fatalf("resized to %dx%d", s.Train.H, s.Train.W)
	}
	for i, v := range s.Train.Pix {
		if v < 76 || v > 78 { // a uniform grey stays grey in every channel, up to rounding
			t.Fatalf("byte %d is %d after resizing a uniform 77 grey", i, v)
		}
	}
	// Statistics of a uniform set: mean 77/255 (up to resampling rounding), std near 0.
	for c := 0; c < 3; c++ {
		if math.Abs(float64(s.Mean[c])-77.0/255) > 1.0/255 || s.Std[c] > 1.0/255 {
			t.Errorf("channel %d: mean %v std %v, want 77/255 and 0", c, s.Mean[c], s.Std[c])
		}
	}
}

func TestStats(t *testing.T) {
	root := tree(t, 4)
	s, err := Load(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	mean, std := Stats(s.Train)
	if mean != s.Mean || std != s.Std {
		t.Errorf("Load statistics differ from Stats")
	}
	// Independently, in float64 over the pattern of training images k=0..3.
	for ch := 0; ch < 3; ch++ {
		var sum, sumSq, n float64
		for k := 0; k < 4; k++ {
			for y := 0; y < 4; y++ {
				for x := 0; x < 4; x++ {
					v := float64(pix(k, ch, x, y)) / 255
					sum += v
					sumSq += v * v
					n++
				}
			}
		}
		m := sum / n
		sd := math.Sqrt(sumSq/n - m*m)
		if math.Abs(float64(mean[ch])-m) > 1e-6 || math.Abs(float64(std[ch])-sd) > 1e-6 {
			t.Errorf("channel %d: mean %v std %v, want %v %v", ch, mean[ch], std[ch], m, sd)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(root string)
		size  int
		want  []string
	}{
		{"missing test", func(root string) { os.RemoveAll(filepath.Join(root, "test")) }, 0,
			[]string{filepath.Join("test") + " is missing", "train/CLASS"}},
		{"empty class", func(root string) { os.MkdirAll(filepath.Join(root, "test", "bee"), 0o755) }, 0,
			[]string{"has classes [ant bee zebra]"}},
		{"empty class both", func(root string) {
			os.MkdirAll(filepath.Join(root, "test", "bee"), 0o755)
			os.MkdirAll(filepath.Join(root, "train", "bee"), 0o755)
		}, 0, []string{filepath.Join("train", "bee") + " holds no .png, .jpg or .jpeg images"}},
		{"corrupt", func(root string) {
			os.WriteFile(filepath.Join(root, "train", "zebra", "c.jpg"), []byte("not a jpeg"), 0o644)
			os.WriteFile(filepath.Join(root, "train", "ant", "c.jpg"), []byte("not a jpeg"), 0o644)
		}, 0, []string{"decode ", filepath.Join("train", "ant", "c.jpg") + ": image: unknown format"}},
		{"mixed sizes", func(root string) {
			writePNG(t, filepath.Join(root, "test", "ant", "z.png"), pattern(0, 9, 9))
		}, 0, []string{filepath.Join("test", "ant", "z.png") + " is 9x9 but the first image is 8x8", "--size"}},
		{"non-square first", func(root string) {
			writePNG(t, filepath.Join(root, "train", "ant", "0.png"), pattern(0, 9, 8))
		}, 0, []string{"0.png is 9x8, not square"}},
		{"size out of range", func(string) {}, -1, []string{"image size -1 out of range"}},
		{"no classes", func(root string) {
			os.RemoveAll(filepath.Join(root, "train"))
			os.MkdirAll(filepath.Join(root, "train"), 0o755)
		}, 0, []string{"holds no class folders"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tree(t, 8)
			tc.setup(root)
			_, err := LoadWorkers(root, tc.size, 2)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
