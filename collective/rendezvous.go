package collective

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"
)

// NCCLIDLen is the length of the id that Rendezvous carries for NCCL
// (NCCL_UNIQUE_ID_BYTES).
const NCCLIDLen = 128

// rendezvousMagic starts every rendezvous message, so that a stray
// connection (a port scanner, another program) is refused rather than read
// as an id.
const rendezvousMagic = "simclr-rendezvous-1"

// Rendezvous hands root's id to every rank over TCP: rank 0 listens on addr
// (host:port) and answers size-1 connections; every other rank dials addr,
// retrying until timeout, and receives id into its id slice (of the same
// length on every rank). It is how NCCL's unique id travels when the ranks
// were not started by mpirun (--dist nccl --dist-addr host:port).
func Rendezvous(addr string, rank, size int, id []byte, timeout time.Duration) error {
	if size < 1 || rank < 0 || rank >= size {
		return fmt.Errorf("rendezvous: rank %d of %d is not a valid rank: set --rank to 0..%d", rank, size, size-1)
	}
	if size == 1 {
		return nil
	}
	deadline := time.Now().Add(timeout)
	if rank == 0 {
		return serveRendezvous(addr, size, id, deadline)
	}
	var conn net.Conn
	var err error
	for {
		conn, err = net.DialTimeout("tcp", addr, time.Until(deadline))
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond) // rank 0 may not be listening yet
	}
	if err != nil {
		return fmt.Errorf("rendezvous: rank %d could not reach rank 0 at %s within %s: %w (is rank 0 running, and --dist-addr the same on every rank?)", rank, addr, timeout, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(deadline)
	hello := make([]byte, 0, len(rendezvousMagic)+16)
	hello = append(hello, rendezvousMagic...)
	hello = binary.BigEndian.AppendUint64(hello, uint64(rank))
	hello = binary.BigEndian.AppendUint64(hello, uint64(size))
	if _, err := conn.Write(hello); err != nil {
		return fmt.Errorf("rendezvous: rank %d: send to %s: %w", rank, addr, err)
	}
	r := bufio.NewReader(conn)
	status := make([]byte, 1)
	if _, err := io.ReadFull(r, status); err != nil {
		return fmt.Errorf("rendezvous: rank %d: no answer from rank 0 at %s: %w", rank, addr, err)
	}
	if status[0] != 0 {
		msg, _ := io.ReadAll(r)
		return fmt.Errorf("rendezvous: rank 0 refused rank %d: %s", rank, msg)
	}
	if _, err := io.ReadFull(r, id); err != nil {
		return fmt.Errorf("rendezvous: rank %d: read id from %s: %w", rank, addr, err)
	}
	return nil
}

func serveRendezvous(addr string, size int, id []byte, deadline time.Time) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("rendezvous: rank 0 cannot listen on %s: %w (choose a free port with --dist-addr)", addr, err)
	}
	defer ln.Close()
	if tl, ok := ln.(*net.TCPListener); ok {
		_ = tl.SetDeadline(deadline)
	}
	seen := make([]bool, size)
	for joined := 1; joined < size; {
		conn, err := ln.Accept()
		if err != nil {
			return fmt.Errorf("rendezvous: rank 0 at %s: %d of %d ranks joined: %w", addr, joined, size, err)
		}
		peer, err := answerRendezvous(conn, size, id, seen, deadline)
		conn.Close()
		if err != nil {
			if peer < 0 { // not one of ours: ignore it
				continue
			}
			return err
		}
		joined++
	}
	return nil
}

// answerRendezvous reads one rank's hello and sends it the id. It returns
// the peer's rank, or -1 for a connection that is not a rank of this run.
func answerRendezvous(conn net.Conn, size int, id []byte, seen []bool, deadline time.Time) (int, error) {
	_ = conn.SetDeadline(deadline)
	hello := make([]byte, len(rendezvousMagic)+16)
	if _, err := io.ReadFull(conn, hello); err != nil || string(hello[:len(rendezvousMagic)]) != rendezvousMagic {
		return -1, fmt.Errorf("not a rendezvous")
	}
	peer := int(binary.BigEndian.Uint64(hello[len(rendezvousMagic):]))
	peerSize := int(binary.BigEndian.Uint64(hello[len(rendezvousMagic)+8:]))
	refuse := func(why string) (int, error) {
		conn.Write(append([]byte{1}, why...))
		return peer, fmt.Errorf("rendezvous: %s", why)
	}
	switch {
	case peerSize != size:
		return refuse(fmt.Sprintf("rank %d says the world has %d ranks, rank 0 says %d: give every rank the same --world-size", peer, peerSize, size))
	case peer <= 0 || peer >= size:
		return refuse(fmt.Sprintf("rank %d is not a rank of a world of %d", peer, size))
	case seen[peer]:
		return refuse(fmt.Sprintf("rank %d joined twice: give every process its own --rank", peer))
	}
	seen[peer] = true
	if _, err := conn.Write(append([]byte{0}, id...)); err != nil {
		return peer, fmt.Errorf("rendezvous: send id to rank %d: %w", peer, err)
	}
	return peer, nil
}
