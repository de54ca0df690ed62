package checkpoint

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// minimalRead is an independent safetensors reader written from the format
// description (8-byte LE header length, JSON header, raw LE data) and not
// from the writer's code, so the two cannot share a misunderstanding.
func minimalRead(t *testing.T, path string) (map[string][]float32, map[string][]int, map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint64(raw[:8]))
	if n%8 != 0 {
		t.Errorf("header length %d is not a multiple of 8", n)
	}
	hdr := raw[8 : 8+n]
	if strings.TrimRight(string(hdr), " ") != strings.TrimSpace(string(hdr)) {
		t.Errorf("header padding is not trailing spaces")
	}
	var entries map[string]any
	if err := json.Unmarshal(hdr, &entries); err != nil {
		t.Fatalf("header is not JSON: %v", err)
	}
	body := raw[8+n:]
	values := map[string][]float32{}
	shapes := map[string][]int{}
	meta := map[string]string{}
	for name, v := range entries {
		m := v.(map[string]any)
		if name == "__metadata__" {
			for k, s := range m {
				meta[k] = s.(string)
			}
			continue
		}
		if m["dtype"] != "F32" {
			t.Fatalf("%s dtype %v", name, m["dtype"])
		}
		off := m["data_offsets"].([]any)
		b, e := int(off[0].(float64)), int(off[1].(float64))
		var shape []int
		for _, d := range m["shape"].([]any) {
			shape = append(shape, int(d.(float64)))
		}
		vals := make([]float32, (e-b)/4)
		for i := range vals {
			vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(body[b+4*i:]))
		}
		values[name], shapes[name] = vals, shape
	}
	return values, shapes, meta
}

func sampleTensors() []Tensor {
	return []Tensor{
		{Name: "conv1.weight", Shape: []int{2, 1, 3, 3}, Data: seq(18, 0.5)},
		{Name: "bn1.num_batches_tracked", Shape: []int{}, Data: []float32{7}},
		{Name: "head.3.bias", Shape: []int{3}, Data: []float32{-1, float32(math.Inf(1)), 1e-30}},
		{Name: "empty", Shape: []int{0, 4}, Data: []float32{}},
	}
}

func seq(n int, scale float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = scale * float32(i-n/2)
	}
	return s
}

func TestWriteReadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	meta := map[string]string{"iteration": "12", "note": `quote " and unicode é`}
	tensors := sampleTensors()
	if err := Write(path, tensors, meta); err != nil {
		t.Fatal(err)
	}
	values, shapes, gotMeta := minimalRead(t, path)
	f, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range tensors {
		for _, src := range []struct {
			name  string
			data  []float32
			shape []int
		}{
			{"independent reader", values[want.Name], shapes[want.Name]},
			{"package reader", mustGet(t, f, want.Name).Data, mustGet(t, f, want.Name).Shape},
		} {
			if fmt.Sprint(src.shape) != fmt.Sprint(want.Shape) && !(len(src.shape) == 0 && len(want.Shape) == 0) {
				t.Errorf("%s: %s shape %v, want %v", src.name, want.Name, src.shape, want.Shape)
			}
			if len(src.data) != len(want.Data) {
				t.Fatalf("%s: %s has %d values, want %d", src.name, want.Name, len(src.data), len(want.Data))
			}
			for i := range want.Data {
				if math.Float32bits(src.data[i]) != math.Float32bits(want.Data[i]) {
					t.Errorf("%s: %s[%d] = %v, want %v", src.name, want.Name, i, src.data[i], want.Data[i])
				}
			}
		}
	}
	for k, v := range meta {
		if gotMeta[k] != v || f.Metadata[k] != v {
			t.Errorf("metadata %s: independent %q, package %q, want %q", k, gotMeta[k], f.Metadata[k], v)
		}
	}
	if got, want := strings.Join(f.Names(), ","), "conv1.weight,bn1.num_batches_tracked,head.3.bias,empty"; got != want {
		t.Errorf("file order %s, want %s", got, want)
	}
}

func mustGet(t *testing.T, f *File, name string) Tensor {
	t.Helper()
	x, ok := f.Get(name)
	if !ok {
		t.Fatalf("tensor %s missing", name)
	}
	return x
}

func TestReadRejectsDamagedFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "good.safetensors")
	if err := Write(path, sampleTensors(), nil); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	hdrLen := binary.LittleEndian.Uint64(good)
	withHeader := func(h string) []byte {
		for len(h)%8 != 0 {
			h += " "
		}
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
		return append(append(b, h...), make([]byte, 16)...)
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "shorter than"},
		{"truncated data", good[:len(good)-5], "data"},
		{"truncated header", good[:8+hdrLen/2], "does not fit"},
		{"huge header length", append(binary.LittleEndian.AppendUint64(nil, 1<<62), good[8:]...), "does not fit"},
		{"not json", withHeader("{nope"), "header JSON"},
		{"f16", withHeader(`{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}`), "only F32"},
		{"offsets past end", withHeader(`{"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}}`), "outside"},
		{"shape mismatch", withHeader(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`), "needs 12 bytes"},
		{"overlap", withHeader(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`), "overlap"},
		{"overflowing shape", withHeader(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`), "impossible shape"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "bad.safetensors")
			os.WriteFile(p, c.data, 0o644)
			_, err := Read(p)
			if err == nil {
				t.Fatal("Read accepted a damaged file")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("error %q should name the file and contain %q", err, c.want)
			}
		})
	}
	if _, err := Read(filepath.Join(t.TempDir(), "missing.safetensors")); err == nil || !strings.Contains(err.Error(), "missing.safetensors") {
		t.Errorf("missing file: error %v should name it", err)
	}
}

func TestWriteIntoMissingFolderFails(t *testing.T) {
	err := Write(filepath.Join(t.TempDir(), "no", "such", "x.safetensors"), sampleTensors(), nil)
	if err == nil || !strings.Contains(err.Error(), "x.safetensors") {
		t.Fatalf("error %v should name the file", err)
	}
}

// killChildEnv makes the test binary, when re-executed, act as a child that
// writes checkpoint A, reports it, then writes a large checkpoint B over it
// until it is killed.
const killChildEnv = "CHECKPOINT_KILL_CHILD_PATH"

func TestKillDuringWriteKeepsPreviousCheckpoint(t *testing.T) {
	if path := os.Getenv(killChildEnv); path != "" {
		if err := Write(path, sampleTensors(), map[string]string{"iteration": "1"}); err != nil {
			fmt.Println("child:", err)
			os.Exit(2)
		}
		fmt.Println("wrote A")
		big := make([]float32, 48<<20) // 192 MB, so the write takes long enough to be interrupted
		for i := range big {
			big[i] = float32(i)
		}
		for {
			Write(path, []Tensor{{Name: "big", Shape: []int{len(big)}, Data: big}}, map[string]string{"iteration": "2"})
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillDuringWriteKeepsPreviousCheckpoint$")
	cmd.Env = append(os.Environ(), killChildEnv+"="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "wrote A\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	// Kill the child as soon as a temporary file holds part of checkpoint B.
	deadline := time.Now().Add(30 * time.Second)
	var partial string
	for partial == "" {
		if time.Now().After(deadline) {
			t.Fatal("the child never started writing checkpoint B")
		}
		matches, _ := filepath.Glob(filepath.Join(dir, ".model.safetensors.tmp-*"))
		for _, m := range matches {
			if info, err := os.Stat(m); err == nil && info.Size() > 0 {
				partial = m
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	info, err := os.Stat(partial)
	if err != nil {
		t.Fatalf("the temporary file disappeared, so the kill did not land mid-write: %v", err)
	}
	if info.Size() >= 8+4*(48<<20) {
		t.Logf("temporary file is complete (%d bytes): killed between write and rename", info.Size())
	}
	f, err := Read(path)
	if err != nil {
		t.Fatalf("previous checkpoint unreadable after the kill: %v", err)
	}
	if f.Metadata["iteration"] != "1" {
		t.Fatalf("checkpoint holds iteration %s, want the previous one (1)", f.Metadata["iteration"])
	}
	want := mustGet(t, f, "conv1.weight")
	for i, v := range seq(18, 0.5) {
		if want.Data[i] != v {
			t.Fatalf("conv1.weight[%d] = %v, want %v", i, want.Data[i], v)
		}
	}
	RemoveStale(path)
	if matches, _ := filepath.Glob(filepath.Join(dir, ".model.safetensors.tmp-*")); len(matches) != 0 {
		t.Errorf("RemoveStale left %v", matches)
	}
}

func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	Encode(&buf, sampleTensors(), map[string]string{"a": "b"})
	f.Add(buf.Bytes())
	f.Add([]byte{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '})
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Decode(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := Encode(&out, file.Tensors, file.Metadata); err != nil {
			t.Fatalf("re-encoding a decoded file: %v", err)
		}
	})
}

// BenchmarkWriteResNet18 writes a checkpoint the size of a full-width
// ResNet-18 with its head (11.5 M floats, 46 MB), synced and renamed.
func BenchmarkWriteResNet18(b *testing.B) {
	data := make([]float32, 11_500_000)
	for i := range data {
		data[i] = float32(i)
	}
	path := filepath.Join(b.TempDir(), "model.safetensors")
	b.SetBytes(int64(4 * len(data)))
	for range b.N {
		if err := Write(path, []Tensor{{Name: "params", Shape: []int{len(data)}, Data: data}}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadResNet18 reads it back.
func BenchmarkReadResNet18(b *testing.B) {
	data := make([]float32, 11_500_000)
	path := filepath.Join(b.TempDir(), "model.safetensors")
	if err := Write(path, []Tensor{{Name: "params", Shape: []int{len(data)}, Data: data}}, nil); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(4 * len(data)))
	for range b.N {
		if _, err := Read(path); err != nil {
			b.Fatal(err)
		}
	}
}
