package blas

import (
	"fmt"
	"runtime"
	"sync"
)

// PureGo returns the pure-Go SGEMM using up to threads goroutines (values
// below 1 mean 1). It follows the GotoBLAS/BLIS layout: C is split into
// column (or row) ranges, one per goroutine; each goroutine packs kc x nc
// panels of op(B) and mc x kc blocks of op(A) into contiguous buffers and
// runs a register-blocked micro-kernel over mr x nr tiles of C. The worker
// goroutines are started here and live until the returned Gemm is garbage;
// packing buffers are reused, so a call allocates nothing in steady state.
func PureGo(threads int) Gemm {
	return newPureGo(threads, bestKernel())
}

func newPureGo(threads int, k kernel) *pureGo {
	if threads < 1 {
		threads = 1
	}
	g := &pureGo{threads: threads, kern: k}
	g.calls.New = func() any { return new(gemmCall) }
	if threads > 1 {
		jobs := make(chan gemmJob, threads)
		for range threads - 1 {
			go gemmWorker(jobs, k)
		}
		// The workers hold only the channel, so g can become garbage; closing
		// the channel then ends them.
		runtime.AddCleanup(g, func(jobs chan gemmJob) { close(jobs) }, jobs)
		g.jobs = jobs
	}
	return g
}

// kernel is a micro-kernel with the block sizes that suit it.
type kernel struct {
	name   string
	mr, nr int // tile of C computed in registers
	// mc, kc and nc bound the packed blocks: an mc x kc block of op(A) stays
	// in L2, a kc x nr sliver of op(B) in L1, a kc x nc panel of op(B) in L2/L3.
	mc, kc, nc int
	// tile adds A B to the mr x nr tile of C whose rows start at c[0],
	// c[ldc], ...: a holds kc steps of mr values of op(A) (alpha applied),
	// b holds kc steps of nr values of op(B).
	tile func(kc int, a, b, c []float32, ldc int)
	// gather, when not nil, packs a sliver whose source runs across the
	// packed order (op(A) not transposed, op(B) transposed): for p < steps
	// and i < rows, dst[p*width+i] = alpha src[i*stride+p], and zero for
	// rows <= i < width. It reports false when it cannot (the packing loops
	// then do it), so it may decline shapes it was not built for.
	gather func(dst, src []float32, stride, rows, steps, width int, alpha float32) bool
	// strided, when not nil, is tile reading A's element (i, p) at
	// a[i*aRow+p*aStep] and B's step p at b[p*bStep:], so that operands
	// can be read in place; with overwrite it stores the tile into C
	// instead of adding it.
	strided func(kc int, a []float32, aRow, aStep int, b []float32, bStep int, c []float32, ldc int, overwrite bool)
	// dot, when not nil, sets sums[4i+j] to the dot product of rows i of
	// a and j of b (4 rows each, lda and ldb apart, k long): a 4 x 4 block
	// of A B^T read in place, for the products whose operands both run
	// along k (useDot).
	dot func(k int, a []float32, lda int, b []float32, ldb int, sums *[16]float32)
}

// useDot reports whether the product goes to the kernel's dot: op(A) not
// transposed and op(B) transposed, so that both are read along k, which
// packing would have to transpose; k at least dotMinK; and the
// part of B every 4 rows of A meet small enough to stay in L2 (the
// weight gradients of the Winograd layers), or A so short that B is read
// about once anyway.
func useDot(k kernel, transA, transB bool, m, n, kk int) bool {
	return k.dot != nil && !transA && transB && kk >= dotMinK && (n*kk <= dotMaxB || m <= 32)
}

// dotMaxB is the most elements of B the dot path keeps re-reading: 256
// KiB. dotMinK is the shortest k it takes: each block ends in a reduction
// of 16 vectors, which a short k does not amortise.
const (
	dotMaxB = 1 << 16
	dotMinK = 128
)

// minWorkPerPart is the multiply-add count below which another goroutine
// costs more in hand-off than it saves.
const minWorkPerPart = 64 * 64 * 64

type pureGo struct {
	threads int
	kern    kernel
	jobs    chan gemmJob // nil when threads == 1
	calls   sync.Pool    // *gemmCall, so calls reuse their packing buffers
}

func (g *pureGo) Name() string {
	return fmt.Sprintf("pure Go (%s kernel %dx%d), %d threads", g.kern.name, g.kern.mr, g.kern.nr, g.threads)
}

// gemmCall is one Sgemm call shared by the goroutines that work on it.
type gemmCall struct {
	transA, transB bool
	m, n, k        int
	alpha          float32
	a, b, c        []float32
	lda, ldb, ldc  int
	beta           float32

	dot       bool // computed by the kernel's dot (useDot)
	splitRows bool // parts are row ranges of C (else column ranges)
	chunk     int  // rows or columns per part
	wg        sync.WaitGroup
	ws        workspace // the calling goroutine's buffers
}

type gemmJob struct {
	call *gemmCall
	part int
}

// workspace holds one goroutine's packing buffers.
type workspace struct {
	packA, packB, tile []float32
}

func gemmWorker(jobs <-chan gemmJob, k kernel) {
	var ws workspace
	for job := range jobs {
		job.call.runPart(job.part, &ws, k)
		job.call.wg.Done()
	}
}

func (g *pureGo) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkArgs(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	call := g.calls.Get().(*gemmCall)
	*call = gemmCall{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha,
		a: a, lda: lda, b: b, ldb: ldb, beta: beta, c: c, ldc: ldc, ws: call.ws,
		dot: useDot(g.kern, transA, transB, m, n, k)}
	parts := call.partition(g.threads, g.kern)
	if parts > 1 {
		call.wg.Add(parts - 1)
		for part := 1; part < parts; part++ {
			g.jobs <- gemmJob{call, part}
		}
	}
	call.runPart(0, &call.ws, g.kern)
	call.wg.Wait()
	call.a, call.b, call.c = nil, nil, nil // do not keep the caller's matrices alive
	g.calls.Put(call)
}

// partition splits C into at most threads ranges of whole tiles along its
// longer dimension (in tiles) and returns how many there are.
func (call *gemmCall) partition(threads int, k kernel) int {
	parts := threads
	if work := call.m * call.n * call.k; work/minWorkPerPart < parts {
		parts = max(1, work/minWorkPerPart)
	}
	tilesM := (call.m + k.mr - 1) / k.mr
	tilesN := (call.n + k.nr - 1) / k.nr
	call.splitRows = tilesM > tilesN
	tiles, tileSize, size := tilesN, k.nr, call.n
	if call.splitRows {
		tiles, tileSize, size = tilesM, k.mr, call.m
	}
	call.chunk = (tiles + parts - 1) / parts * tileSize
	return (size + call.chunk - 1) / call.chunk
}

// runPart computes the part-th range of C: beta scaling, then the blocked
// product over kc x nc panels of op(B) and mc x kc blocks of op(A).
//
// With a kernel that reads its operands through strides (kernel.strided),
// packing is skipped where it would cost more than it saves: op(A) is read
// in place when the part has few columns (each packed element of A would be
// used by at most directMaxSlivers slivers of B) and alpha is 1, op(B) when
// B is not transposed and the part has few rows; and a product with beta = 0
// stores its first block of k into C instead of clearing C first.
func (call *gemmCall) runPart(part int, ws *workspace, k kernel) {
	i0, i1, j0, j1 := 0, call.m, 0, call.n
	if call.splitRows {
		i0, i1 = part*call.chunk, min(call.m, (part+1)*call.chunk)
	} else {
		j0, j1 = part*call.chunk, min(call.n, (part+1)*call.chunk)
	}
	if call.dot {
		call.runDot(i0, i1, j0, j1, k)
		return
	}
	var plan blockPlan
	if k.strided != nil {
		plan.overwrite = call.beta == 0
		plan.directA = call.alpha == 1 && j1-j0 <= directMaxSlivers*k.nr
		plan.directB = !call.transB && i1-i0 <= directMaxSlivers*k.mr
	}
	if !plan.overwrite {
		scaleC(i1-i0, j1-j0, call.beta, call.c[i0*call.ldc+j0:], call.ldc)
	}
	ws.grow(k, min(i1-i0, k.mc), min(j1-j0, k.nc), min(call.k, k.kc))
	for jc := j0; jc < j1; jc += k.nc {
		nc := min(k.nc, j1-jc)
		for pc := 0; pc < call.k; pc += k.kc {
			kc := min(k.kc, call.k-pc)
			if plan.directB {
				// Only a last sliver narrower than nr is packed.
				if full := nc / k.nr * k.nr; full < nc {
					packB(ws.packB[full*kc:], call.b, call.ldb, call.transB, pc, kc, jc+full, nc-full, k)
				}
			} else {
				packB(ws.packB, call.b, call.ldb, call.transB, pc, kc, jc, nc, k)
			}
			for ic := i0; ic < i1; ic += k.mc {
				mc := min(k.mc, i1-ic)
				if plan.directA {
					if full := mc / k.mr * k.mr; full < mc {
						packA(ws.packA[full*kc:], call.a, call.lda, call.transA, ic+full, mc-full, pc, kc, k, call.alpha)
					}
				} else {
					packA(ws.packA, call.a, call.lda, call.transA, ic, mc, pc, kc, k, call.alpha)
				}
				call.macroKernel(ws, k, plan, ic, mc, jc, nc, pc, kc)
			}
		}
	}
}

// runDot computes C[i0:i1, j0:j1] = alpha A B^T + beta C with the
// kernel's dot, 4 x 4 blocks at a time: 4 rows of A stay in L1 while the
// rows of B go by; the blocks at the edges are summed in Go.
func (call *gemmCall) runDot(i0, i1, j0, j1 int, k kernel) {
	var sums [16]float32
	a, b, c, lda, ldb, ldc, kk := call.a, call.b, call.c, call.lda, call.ldb, call.ldc, call.k
	alpha, beta := call.alpha, call.beta
	for i := i0; i < i1; i += 4 {
		rows := min(4, i1-i)
		for j := j0; j < j1; j += 4 {
			cols := min(4, j1-j)
			if rows == 4 && cols == 4 {
				k.dot(kk, a[i*lda:], lda, b[j*ldb:], ldb, &sums)
			} else {
				for r := range rows {
					ar := a[(i+r)*lda : (i+r)*lda+kk]
					for q := range cols {
						br := b[(j+q)*ldb : (j+q)*ldb+kk]
						var sum float32
						for p, v := range ar {
							sum += v * br[p]
						}
						sums[4*r+q] = sum
					}
				}
			}
			for r := range rows {
				row := c[(i+r)*ldc+j : (i+r)*ldc+j+cols]
				s := sums[4*r : 4*r+cols]
				if beta == 0 { // C is not read: it may hold NaNs
					for q, v := range s {
						row[q] = alpha * v
					}
					continue
				}
				for q, v := range s {
					row[q] = alpha*v + beta*row[q]
				}
			}
		}
	}
}

// directMaxSlivers bounds the reuse below which an operand is read in place
// rather than packed: packing costs about as much per element as the
// multiply-adds of a few slivers.
const directMaxSlivers = 4

// blockPlan says how runPart feeds a strided kernel.
type blockPlan struct {
	directA, directB bool // read op(A), op(B) in place (full slivers only)
	overwrite        bool // beta = 0: the first block of k stores into C
}

// macroKernel adds the block product of op(A)[ic:ic+mc, pc:pc+kc] and
// op(B)[pc:pc+kc, jc:jc+nc] to C[ic:ic+mc, jc:jc+nc]. Edge tiles are
// computed into a scratch tile and only their valid part added.
func (call *gemmCall) macroKernel(ws *workspace, k kernel, plan blockPlan, ic, mc, jc, nc, pc, kc int) {
	mr, nr, ldc := k.mr, k.nr, call.ldc
	overwrite := plan.overwrite && pc == 0
	for s := 0; s < nc; s += nr {
		bp, bStep := ws.packB[s*kc:(s+nr)*kc], nr
		cols := min(nr, nc-s)
		if plan.directB && cols == nr {
			bp, bStep = call.b[pc*call.ldb+jc+s:], call.ldb
		}
		for r := 0; r < mc; r += mr {
			ap, aRow, aStep := ws.packA[r*kc:(r+mr)*kc], 1, mr
			rows := min(mr, mc-r)
			if plan.directA && rows == mr {
				if call.transA {
					ap, aRow, aStep = call.a[pc*call.lda+ic+r:], 1, call.lda
				} else {
					ap, aRow, aStep = call.a[(ic+r)*call.lda+pc:], call.lda, 1
				}
			}
			off := (ic+r)*ldc + jc + s
			if rows == mr && cols == nr {
				if k.strided != nil {
					k.strided(kc, ap, aRow, aStep, bp, bStep, call.c[off:], ldc, overwrite)
				} else {
					k.tile(kc, ap, bp, call.c[off:], ldc)
				}
				continue
			}
			tile := ws.tile[:mr*nr]
			if k.strided != nil {
				k.strided(kc, ap, aRow, aStep, bp, bStep, tile, nr, true)
			} else {
				clear(tile)
				k.tile(kc, ap, bp, tile, nr)
			}
			for i := 0; i < rows; i++ {
				dst := call.c[off+i*ldc : off+i*ldc+cols]
				if overwrite {
					copy(dst, tile[i*nr:i*nr+cols])
					continue
				}
				for j, v := range tile[i*nr : i*nr+cols] {
					dst[j] += v
				}
			}
		}
	}
}

// grow makes the buffers large enough for blocks of at most mc x kc of
// op(A) and kc x nc of op(B), rounded up to whole tiles.
func (ws *workspace) grow(k kernel, mc, nc, kc int) {
	needA := (mc + k.mr - 1) / k.mr * k.mr * kc
	needB := (nc + k.nr - 1) / k.nr * k.nr * kc
	if len(ws.packA) < needA {
		ws.packA = make([]float32, needA)
	}
	if len(ws.packB) < needB {
		ws.packB = make([]float32, needB)
	}
	if len(ws.tile) < k.mr*k.nr {
		ws.tile = make([]float32, k.mr*k.nr)
	}
}

// packA copies alpha op(A)[i0:i0+mc, p0:p0+kc] into dst as consecutive
// slivers of mr rows, each stored step by step (dst[p*mr+i] within a sliver),
// padding the last sliver with zero rows.
func packA(dst, a []float32, lda int, transA bool, i0, mc, p0, kc int, k kernel, alpha float32) {
	mr := k.mr
	for r := 0; r < mc; r += mr {
		sliver := dst[r*kc : (r+mr)*kc]
		rows := min(mr, mc-r)
		if transA {
			// op(A)[i, p] = a[p*lda+i]: each step reads rows consecutive values.
			for p := 0; p < kc; p++ {
				src := a[(p0+p)*lda+i0+r:]
				src = src[:rows]
				out := sliver[p*mr : p*mr+mr]
				for i, v := range src {
					out[i] = alpha * v
				}
				clear(out[rows:])
			}
			continue
		}
		if k.gather != nil && k.gather(sliver, a[(i0+r)*lda+p0:], lda, rows, kc, mr, alpha) {
			continue
		}
		for i := 0; i < rows; i++ {
			src := a[(i0+r+i)*lda+p0:]
			src = src[:kc]
			for p, v := range src {
				sliver[p*mr+i] = alpha * v
			}
		}
		for i := rows; i < mr; i++ {
			for p := 0; p < kc; p++ {
				sliver[p*mr+i] = 0
			}
		}
	}
}

// packB copies op(B)[p0:p0+kc, j0:j0+nc] into dst as consecutive slivers of
// nr columns, each stored step by step (dst[p*nr+j] within a sliver),
// padding the last sliver with zero columns.
func packB(dst, b []float32, ldb int, transB bool, p0, kc, j0, nc int, k kernel) {
	nr := k.nr
	for s := 0; s < nc; s += nr {
		sliver := dst[s*kc : (s+nr)*kc]
		cols := min(nr, nc-s)
		if !transB {
			// op(B)[p, j] = b[p*ldb+j]: each step copies cols consecutive values.
			for p := 0; p < kc; p++ {
				out := sliver[p*nr : p*nr+nr]
				copy(out, b[(p0+p)*ldb+j0+s:][:cols])
				clear(out[cols:])
			}
			continue
		}
		if k.gather != nil && k.gather(sliver, b[(j0+s)*ldb+p0:], ldb, cols, kc, nr, 1) {
			continue
		}
		for j := 0; j < cols; j++ {
			src := b[(j0+s+j)*ldb+p0:]
			src = src[:kc]
			for p, v := range src {
				sliver[p*nr+j] = v
			}
		}
		for j := cols; j < nr; j++ {
			for p := 0; p < kc; p++ {
				sliver[p*nr+j] = 0
			}
		}
	}
}
