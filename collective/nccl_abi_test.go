//go:build linux && (amd64 || arm64)

package collective

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/simclr-go/simclr/internal/testsupport/testenv"
)

// TestNCCLCallingConvention loads a fake libnccl.so.2 (testdata/fakenccl.c,
// built with the C compiler) that records its arguments, and checks what
// the Go side passes: ncclCommInitRank's 128-byte id by value (on the stack
// on amd64, as a pointer to a copy on arm64) between comm, nranks and rank,
// ncclAllReduce's seventh argument (the stream) on the stack, and error
// strings. No GPU is needed; a real NCCL is tested by TestNCCLSingleRank.
func TestNCCLCallingConvention(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		testenv.Missing(t, "no C compiler (cc) to build the fake NCCL: %v", err)
	}
	lib := filepath.Join(t.TempDir(), "libnccl.so.2")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", lib, "testdata/fakenccl.c").CombinedOutput(); err != nil {
		t.Fatalf("build fake NCCL: %v\n%s", err, out)
	}
	t.Setenv("SIMCLR_NCCL_LIB", lib)
	n := &NCCL{rank: 2, size: 5}
	if err := n.load(nil, 0); err != nil {
		t.Fatal(err)
	}
	if n.path != lib {
		t.Fatalf("loaded %s, want the fake %s", n.path, lib)
	}
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	lastInit, _ := purego.Dlsym(h, "fakeLastInit")
	lastAllReduce, _ := purego.Dlsym(h, "fakeLastAllReduce")

	id := make([]byte, NCCLIDLen)
	if err := n.check("ncclGetUniqueId", call(n.fn.getUniqueID, uintptr(unsafe.Pointer(&id[0])))); err != nil {
		t.Fatal(err)
	}
	if id[0] != 1 || id[127] != byte((127*3+1)%256) {
		t.Fatalf("unique id starts %v ... ends %v", id[:4], id[124:])
	}
	if err := n.check("ncclCommInitRank", n.commInitRank(id)); err != nil {
		t.Fatal(err)
	}
	var gotN, gotRank int32
	gotID := make([]byte, NCCLIDLen)
	call(lastInit, uintptr(unsafe.Pointer(&gotN)), uintptr(unsafe.Pointer(&gotRank)), uintptr(unsafe.Pointer(&gotID[0])))
	if gotN != 5 || gotRank != 2 || !bytes.Equal(gotID, id) || n.comm != 0x1234 {
		t.Fatalf("ncclCommInitRank received nranks %d, rank %d, id equal %v, and returned comm %#x; want 5, 2, true, 0x1234",
			gotN, gotRank, bytes.Equal(gotID, id), n.comm)
	}

	const send, recv, count, stream = 0x1000, 0x2000, 11498176, 0xabcdef
	if err := n.check("ncclAllReduce", call(n.fn.allReduce, send, recv, count, ncclFloat32, ncclSum, n.comm, stream)); err != nil {
		t.Fatal(err)
	}
	var s, r, c, cm, st uintptr
	var dt, op int32
	call(lastAllReduce, uintptr(unsafe.Pointer(&s)), uintptr(unsafe.Pointer(&r)), uintptr(unsafe.Pointer(&c)),
		uintptr(unsafe.Pointer(&dt)), uintptr(unsafe.Pointer(&op)), uintptr(unsafe.Pointer(&cm)), uintptr(unsafe.Pointer(&st)))
	if s != send || r != recv || c != count || dt != ncclFloat32 || op != ncclSum || cm != 0x1234 || st != stream {
		t.Fatalf("ncclAllReduce received %#x %#x %d %d %d %#x %#x", s, r, c, dt, op, cm, st)
	}

	bad := &NCCL{rank: 7, size: 3, fn: n.fn}
	err = bad.check("ncclCommInitRank", bad.commInitRank(id))
	if err == nil || !strings.Contains(err.Error(), "fake NCCL error 4") || !strings.Contains(err.Error(), "rank 7 of 3") {
		t.Fatalf("error = %v, want the library's message and the rank", err)
	}
}
