package collective

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/tensor"
)

// checkCollectives runs every operation of c with values that depend on the
// rank and checks the results exactly (all values are small integers or
// halves, exact in float32 sums).
func checkCollectives(t *testing.T, c Comm, b tensor.Backend) {
	t.Helper()
	p, r := c.Size(), c.Rank()
	// Long enough to span more than one chunk of a ring all-reduce.
	const n = 100003
	host := make([]float32, n)
	for i := range host {
		host[i] = float32(r+1) + float32(i%7)/2
	}
	buf := b.Alloc(n)
	defer b.Free(buf)
	b.Upload(buf, host)
	if err := c.AllReduceSum(buf); err != nil {
		t.Fatalf("all-reduce: %v", err)
	}
	b.Download(host, buf)
	for i, v := range host {
		want := float32(p*(p+1)/2) + float32(p)*float32(i%7)/2
		if v != want {
			t.Fatalf("rank %d: all-reduce[%d] = %g, want %g", r, i, v, want)
		}
	}

	for i := range host {
		host[i] = float32(100*r + i%5)
	}
	b.Upload(buf, host)
	root := p - 1
	if err := c.Broadcast(buf, root); err != nil {
		t.Fatalf("broadcast: %v", err)
	}
	b.Download(host, buf)
	for i, v := range host {
		if want := float32(100*root + i%5); v != want {
			t.Fatalf("rank %d: broadcast[%d] = %g, want %g", r, i, v, want)
		}
	}

	x := []float64{float64(r), 1, math.Ldexp(1, 40) + float64(r)}
	if err := c.AllReduceFloat64(x); err != nil {
		t.Fatalf("float64 all-reduce: %v", err)
	}
	sumR := float64(p * (p - 1) / 2)
	if want := []float64{sumR, float64(p), float64(p)*math.Ldexp(1, 40) + sumR}; fmt.Sprint(x) != fmt.Sprint(want) {
		t.Fatalf("rank %d: float64 all-reduce = %v, want %v", r, x, want)
	}

	mine := bytes.Repeat([]byte{byte(200 + r)}, r+1)
	all, err := AllGatherBytes(c, mine)
	if err != nil {
		t.Fatal(err)
	}
	for q := 0; q < p; q++ {
		if want := bytes.Repeat([]byte{byte(200 + q)}, q+1); !bytes.Equal(all[q], want) {
			t.Fatalf("rank %d: gathered[%d] = %v, want %v", r, q, all[q], want)
		}
	}
	got, err := BroadcastBytes(c, []byte(fmt.Sprintf("from rank %d", r)), 0)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "from rank 0" {
		t.Fatalf("rank %d: broadcast bytes = %q", r, got)
	}
	stop, err := Agree(c, r == p-1)
	if err != nil || !stop {
		t.Fatalf("rank %d: agree = %v, %v; want true", r, stop, err)
	}
	stop, err = Agree(c, false)
	if err != nil || stop {
		t.Fatalf("rank %d: agree(false everywhere) = %v, %v; want false", r, stop, err)
	}
	if err := c.Barrier(); err != nil {
		t.Fatalf("barrier: %v", err)
	}
}

func TestSingle(t *testing.T) {
	checkCollectives(t, Single{}, cpu.New())
}

func TestParseKind(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Kind
		ok   bool
	}{
		{"", KindAuto, true}, {"auto", KindAuto, true}, {"MPI", KindMPI, true}, {" nccl ", KindNCCL, true},
		{"none", KindNone, true}, {"gloo", "", false},
	} {
		got, err := ParseKind(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseKind(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestDetectLaunch(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want Launch
		ok   bool
	}{
		{"plain process", nil, Launch{}, true},
		{"mpirun", map[string]string{envMPISize: "4", envMPIRank: "2", envMPILocalRank: "0"},
			Launch{Size: 4, Rank: 2, LocalRank: 0, By: "mpirun (Open MPI)"}, true},
		{"bad rank", map[string]string{envMPISize: "2", envMPIRank: "2"}, Launch{}, false},
		{"garbage", map[string]string{envMPISize: "two", envMPIRank: "0"}, Launch{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DetectLaunch(func(k string) string { return tc.env[k] })
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("DetectLaunch = %+v, %v; want %+v, ok %v", got, err, tc.want, tc.ok)
			}
		})
	}
}

// --dist auto with a rendezvous address but no NCCL (here: the CPU backend)
// is an error naming --dist-addr: MPI outside mpirun would make every
// process a world of one, all writing the run folder as rank 0.
func TestAutoWithRendezvousNeedsNCCL(t *testing.T) {
	noLaunch := func(string) string { return "" }
	c, _, err := Open(KindAuto, cpu.New(), Options{Addr: "127.0.0.1:1", Rank: 1, Size: 2, Getenv: noLaunch})
	if err == nil || !strings.Contains(err.Error(), "--dist-addr") || !strings.Contains(err.Error(), "mpirun") {
		if c != nil {
			c.Close()
		}
		t.Fatalf("--dist auto --dist-addr on the CPU: %v, want an error naming --dist-addr and mpirun", err)
	}
	// Without an address it is one process, as before.
	c, line, err := Open(KindAuto, cpu.New(), Options{Getenv: noLaunch})
	if err != nil || c.Size() != 1 || !strings.Contains(line, "none") {
		t.Fatalf("--dist auto alone: %v, %q, want a single process", err, line)
	}
}
