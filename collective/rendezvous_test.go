package collective

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestRendezvousHandsOutRootsID(t *testing.T) {
	const size = 4
	addr := freeAddr(t)
	ids := make([][]byte, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	// The others start first: they must wait for rank 0 to listen.
	for r := size - 1; r >= 0; r-- {
		ids[r] = make([]byte, NCCLIDLen)
		if r == 0 {
			for i := range ids[0] {
				ids[0][i] = byte(i*7 + 1)
			}
		}
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			errs[r] = Rendezvous(addr, r, size, ids[r], 10*time.Second)
		}(r)
		if r == size-1 {
			time.Sleep(300 * time.Millisecond)
		}
	}
	wg.Wait()
	for r := 0; r < size; r++ {
		if errs[r] != nil {
			t.Fatalf("rank %d: %v", r, errs[r])
		}
		if !bytes.Equal(ids[r], ids[0]) {
			t.Errorf("rank %d got id %x, want %x", r, ids[r][:8], ids[0][:8])
		}
	}
}

func TestRendezvousRefusesMismatches(t *testing.T) {
	for _, tc := range []struct {
		name        string
		peerRank    int
		peerSize    int
		wantPeerErr string
	}{
		{"world sizes differ", 1, 3, "same --world-size"},
		{"rank out of range", 5, 2, "not a valid rank"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeAddr(t)
			var rootErr error
			done := make(chan struct{})
			go func() {
				rootErr = Rendezvous(addr, 0, 2, make([]byte, NCCLIDLen), 3*time.Second)
				close(done)
			}()
			err := Rendezvous(addr, tc.peerRank, tc.peerSize, make([]byte, NCCLIDLen), 3*time.Second)
			<-done
			if err == nil || !strings.Contains(err.Error(), tc.wantPeerErr) {
				t.Errorf("peer error = %v, want one containing %q", err, tc.wantPeerErr)
			}
			if tc.peerRank < tc.peerSize && rootErr == nil {
				t.Errorf("rank 0 accepted a mismatched peer")
			}
		})
	}
}

func TestRendezvousTimesOut(t *testing.T) {
	addr := freeAddr(t)
	err := Rendezvous(addr, 1, 2, make([]byte, NCCLIDLen), 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "could not reach rank 0") {
		t.Fatalf("err = %v", err)
	}
}
