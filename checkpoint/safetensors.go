package checkpoint

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Tensor is one named float32 array in row-major order.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// File is a checkpoint read into memory.
type File struct {
	Path     string
	Metadata map[string]string
	// Tensors are in the order of their data in the file.
	Tensors []Tensor
	index   map[string]int
}

// Get returns the tensor called name.
func (f *File) Get(name string) (Tensor, bool) {
	i, ok := f.index[name]
	if !ok {
		return Tensor{}, false
	}
	return f.Tensors[i], true
}

// Names lists the tensor names in file order.
func (f *File) Names() []string {
	names := make([]string, len(f.Tensors))
	for i, t := range f.Tensors {
		names[i] = t.Name
	}
	return names
}

// maxHeaderBytes bounds the JSON header a reader accepts, so a corrupt length
// cannot make it allocate gigabytes (the safetensors reference uses 100 MB).
const maxHeaderBytes = 100 << 20

const metadataKey = "__metadata__"

// Encode writes tensors and metadata in safetensors format to w.
func Encode(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	header, err := buildHeader(tensors, metadata)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var lenBytes [8]byte
	binary.LittleEndian.PutUint64(lenBytes[:], uint64(len(header)))
	if _, err := bw.Write(lenBytes[:]); err != nil {
		return err
	}
	if _, err := bw.Write(header); err != nil {
		return err
	}
	var scratch [4096]byte
	for _, t := range tensors {
		data := t.Data
		for len(data) > 0 {
			n := min(len(data), len(scratch)/4)
			for i, v := range data[:n] {
				binary.LittleEndian.PutUint32(scratch[4*i:], math.Float32bits(v))
			}
			if _, err := bw.Write(scratch[:4*n]); err != nil {
				return err
			}
			data = data[n:]
		}
	}
	return bw.Flush()
}

// buildHeader writes the JSON header with the metadata first and tensors in
// the given order (encoding/json would sort map keys; file order matters for
// readers that stream).
func buildHeader(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	if len(metadata) > 0 {
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		ordered := make(map[string]string, len(metadata))
		for _, k := range keys {
			ordered[k] = metadata[k]
		}
		meta, err := json.Marshal(ordered)
		if err != nil {
			return nil, err
		}
		buf.WriteString(`"` + metadataKey + `":`)
		buf.Write(meta)
	}
	seen := make(map[string]bool, len(tensors))
	var offset int64
	for i, t := range tensors {
		if t.Name == "" || t.Name == metadataKey {
			return nil, fmt.Errorf("checkpoint: tensor %d has the reserved or empty name %q", i, t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("checkpoint: tensor name %q appears twice", t.Name)
		}
		seen[t.Name] = true
		elems := 1
		for _, d := range t.Shape {
			if d < 0 {
				panic(fmt.Sprintf("checkpoint: tensor %s has negative shape %v", t.Name, t.Shape))
			}
			elems *= d
		}
		if elems != len(t.Data) {
			panic(fmt.Sprintf("checkpoint: tensor %s has shape %v (%d elements) but %d values", t.Name, t.Shape, elems, len(t.Data)))
		}
		name, err := json.Marshal(t.Name)
		if err != nil {
			return nil, err
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		shapeJSON, _ := json.Marshal(shape)
		end := offset + 4*int64(len(t.Data))
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `%s:{"dtype":"F32","shape":%s,"data_offsets":[%d,%d]}`, name, shapeJSON, offset, end)
		offset = end
	}
	buf.WriteByte('}')
	for buf.Len()%8 != 0 {
		buf.WriteByte(' ')
	}
	return buf.Bytes(), nil
}

// Write stores tensors and metadata at path atomically: the data goes to a
// temporary file in the same folder, which is synced and then renamed over
// path, and the folder is synced, so path always holds either the old or the
// new complete file.
func Write(path string, tensors []Tensor, metadata map[string]string) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write checkpoint %s: %w (check that the folder exists and is writable)", path, err)
	}
	tmpName := tmp.Name()
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmpName)
		return fmt.Errorf("write checkpoint %s: %w (check free disk space)", path, err)
	}
	if err := Encode(tmp, tensors, metadata); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmpName)
		return fmt.Errorf("write checkpoint %s: %w", path, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		os.Remove(tmpName)
		return fmt.Errorf("write checkpoint %s: %w", path, err)
	}
	return syncDir(dir)
}

// syncDir makes a rename durable: the new directory entry is only on disk
// once the folder itself is synced.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	return nil
}

// RemoveStale deletes temporary files that an interrupted Write of path left
// behind.
func RemoveStale(path string) {
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*"))
	for _, m := range matches {
		os.Remove(m)
	}
}

// Read loads a safetensors file of F32 tensors.
func Read(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read checkpoint: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	file, err := Decode(f, info.Size())
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w (the file is damaged or not a safetensors checkpoint; use an earlier one or retrain)", path, err)
	}
	file.Path = path
	return file, nil
}

type headerEntry struct {
	DType       string  `json:"dtype"`
	Shape       []int   `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// Decode reads a safetensors stream of the given total size. Every length in
// the header is checked against size before anything is allocated.
func Decode(r io.Reader, size int64) (*File, error) {
	var lenBytes [8]byte
	if size < 8 {
		return nil, fmt.Errorf("file is %d bytes, shorter than the 8-byte header length", size)
	}
	if _, err := io.ReadFull(r, lenBytes[:]); err != nil {
		return nil, fmt.Errorf("header length: %w", err)
	}
	headerLen := binary.LittleEndian.Uint64(lenBytes[:])
	if headerLen > maxHeaderBytes || int64(headerLen) > size-8 {
		return nil, fmt.Errorf("header length %d does not fit in a %d-byte file", headerLen, size)
	}
	header := make([]byte, headerLen)
	if _, err := io.ReadFull(r, header); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return nil, fmt.Errorf("header JSON: %w", err)
	}
	dataSize := size - 8 - int64(headerLen)
	file := &File{Metadata: map[string]string{}, index: map[string]int{}}
	type located struct {
		Tensor
		begin, end int64
	}
	var entries []located
	for name, msg := range raw {
		if name == metadataKey {
			if err := json.Unmarshal(msg, &file.Metadata); err != nil {
				return nil, fmt.Errorf("metadata must map strings to strings: %w", err)
			}
			continue
		}
		if name == "" {
			return nil, fmt.Errorf("a tensor has an empty name")
		}
		var e headerEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		if e.DType != "F32" {
			return nil, fmt.Errorf("tensor %q has dtype %q; only F32 is supported", name, e.DType)
		}
		if len(e.DataOffsets) != 2 || e.DataOffsets[0] < 0 || e.DataOffsets[1] < e.DataOffsets[0] || e.DataOffsets[1] > dataSize {
			return nil, fmt.Errorf("tensor %q has data_offsets %v outside the %d data bytes", name, e.DataOffsets, dataSize)
		}
		elems := int64(1)
		for _, d := range e.Shape {
			if d < 0 || (d > 0 && elems > dataSize/int64(d)) {
				return nil, fmt.Errorf("tensor %q has impossible shape %v", name, e.Shape)
			}
			elems *= int64(d)
		}
		if 4*elems != e.DataOffsets[1]-e.DataOffsets[0] {
			return nil, fmt.Errorf("tensor %q: shape %v needs %d bytes but data_offsets %v span %d", name, e.Shape, 4*elems, e.DataOffsets, e.DataOffsets[1]-e.DataOffsets[0])
		}
		entries = append(entries, located{Tensor{Name: name, Shape: e.Shape}, e.DataOffsets[0], e.DataOffsets[1]})
	}
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].begin != entries[j].begin {
			return entries[i].begin < entries[j].begin
		}
		return entries[i].end < entries[j].end
	})
	for i := 1; i < len(entries); i++ {
		if entries[i].begin < entries[i-1].end {
			return nil, fmt.Errorf("tensors %q and %q overlap", entries[i-1].Name, entries[i].Name)
		}
	}
	data := make([]byte, dataSize)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, fmt.Errorf("tensor data (%d bytes): %w", dataSize, err)
	}
	for _, e := range entries {
		vals := make([]float32, (e.end-e.begin)/4)
		for i := range vals {
			vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[e.begin+4*int64(i):]))
		}
		e.Data = vals
		if e.Shape == nil {
			e.Shape = []int{}
		}
		file.index[e.Name] = len(file.Tensors)
		file.Tensors = append(file.Tensors, e.Tensor)
	}
	return file, nil
}

// Missing lists the names in want that f lacks, for error messages.
func (f *File) Missing(want []string) string {
	var missing []string
	for _, n := range want {
		if _, ok := f.index[n]; !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) > 5 {
		missing = append(missing[:5], fmt.Sprintf("... (%d in all)", len(missing)))
	}
	return strings.Join(missing, ", ")
}

// ReadMetadata returns the __metadata__ of the safetensors file at path
// without reading its tensors.
func ReadMetadata(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read checkpoint: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	var lenBytes [8]byte
	if _, err := io.ReadFull(f, lenBytes[:]); err != nil {
		return nil, fmt.Errorf("read checkpoint %s: header length: %w (not a safetensors file)", path, err)
	}
	n := binary.LittleEndian.Uint64(lenBytes[:])
	if n > maxHeaderBytes || int64(n) > info.Size()-8 {
		return nil, fmt.Errorf("read checkpoint %s: header length %d does not fit in a %d-byte file (not a safetensors file)", path, n, info.Size())
	}
	header := make([]byte, n)
	if _, err := io.ReadFull(f, header); err != nil {
		return nil, fmt.Errorf("read checkpoint %s: header: %w", path, err)
	}
	var h struct {
		Meta map[string]string `json:"__metadata__"`
	}
	if err := json.Unmarshal(header, &h); err != nil {
		return nil, fmt.Errorf("read checkpoint %s: header JSON: %w", path, err)
	}
	if h.Meta == nil {
		h.Meta = map[string]string{}
	}
	return h.Meta, nil
}
