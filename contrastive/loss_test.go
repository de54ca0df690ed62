package contrastive

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/tensor"
)

// Each loss declares what it supports, and the oracle refuses exactly the
// queries a loss does not support, naming the loss.
func TestLossesServeWhatTheyDeclare(t *testing.T) {
	for _, tc := range []struct {
		kind LossKind
		want Support
	}{
		{NTXent, Support{Levels: true, Previous: true}},
		{DCL, Support{}},
		{SogCLR, Support{ImageState: true}},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			if got := tc.kind.Supports(); got != tc.want {
				t.Fatalf("supports %+v, want %+v", got, tc.want)
			}
			if k, err := ParseLoss(strings.ToUpper(tc.kind.String())); err != nil || k != tc.kind {
				t.Fatalf("ParseLoss(%q) = %v, %v", tc.kind, k, err)
			}
			tr := newTestOracle(t)
			loss, err := NewLoss(tc.kind, tr.b, LossConfig{Temperature: 0.5, TrainImages: 64, Gamma: GammaSchedule{Gamma: 0.9}})
			if err != nil {
				t.Fatal(err)
			}
			tr.oracle.SetLoss(loss)
			_, stateful := loss.(ImageState)
			if stateful != tc.want.ImageState {
				t.Errorf("ImageState implemented: %v, declared %v", stateful, tc.want.ImageState)
			}
			out := tr.b.Alloc(tr.model.Params().Len())
			defer tr.b.Free(out)
			for _, q := range []struct {
				at     mlmc.Point
				diff   bool
				served bool
			}{
				{mlmc.Current, false, true},
				{mlmc.Current, true, tc.want.Levels},
				{mlmc.Previous, false, tc.want.Previous},
			} {
				s, _, err := tr.oracle.Draw(3)
				if err != nil {
					t.Fatal(err)
				}
				err = tr.oracle.Eval(s, q.at, q.diff, 1, out)
				tr.oracle.Release(s)
				if served := err == nil; served != q.served {
					t.Errorf("query at %s, diff %v: error %v, want served %v", q.at, q.diff, err, q.served)
				}
				if err != nil && !strings.Contains(err.Error(), tc.kind.String()) {
					t.Errorf("error %q does not name the loss", err)
				}
			}
		})
	}
	if _, err := ParseLoss("infonce"); err == nil {
		t.Error("ParseLoss accepted infonce")
	}
}

// failingLoss serves every query and fails it, as a device failure would.
type failingLoss struct{ ntXent }

var errLossFailed = errors.New("loss failed")

func (failingLoss) Eval(Batch, tensor.Buffer, tensor.Buffer) (tensor.LossResult, error) {
	return tensor.LossResult{}, errLossFailed
}

// A query at x_{t-1} swaps the previous parameters in and always swaps x_t
// back: after it succeeds and after its loss fails.
func TestQueryAtPreviousAlwaysRestoresTheParameters(t *testing.T) {
	tr := newTestOracle(t)
	params := tr.model.Params()
	// x_{t-1} unlike x_t.
	tr.b.Scale(tr.prev, 0.5)
	before := slices.Clone(cpu.Data(params.Flat()))
	out := tr.b.Alloc(params.Len())
	defer tr.b.Free(out)
	for _, tc := range []struct {
		name string
		loss Loss
		want error
	}{
		{"served", newNTXent(tr.b, 0.5), nil},
		{"failed", &failingLoss{*newNTXent(tr.b, 0.5)}, errLossFailed},
	} {
		tr.oracle.SetLoss(tc.loss)
		s, _, err := tr.oracle.Draw(2)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.oracle.Eval(s, mlmc.Previous, true, 1, out); !errors.Is(err, tc.want) {
			t.Fatalf("%s: error %v, want %v", tc.name, err, tc.want)
		}
		tr.oracle.Release(s)
		if !slices.Equal(cpu.Data(params.Flat()), before) {
			t.Fatalf("%s: the parameters after a query at x_{t-1} are not x_t's", tc.name)
		}
	}
}

// oneRank is the communicator of a single rank: the sum over ranks is the
// buffer itself.
type oneRank struct{}

func (oneRank) Rank() int                        { return 0 }
func (oneRank) Size() int                        { return 1 }
func (oneRank) AllReduceSum(tensor.Buffer) error { return nil }

// Split over one rank, a draw is the whole draw: the sharded oracle adds
// exactly the plain oracle's gradient, for each loss (SogCLR's gathered
// indices included), and counts the same passes.
func TestShardedOnOneRankIsTheOracle(t *testing.T) {
	for _, kind := range LossKinds {
		t.Run(kind.String(), func(t *testing.T) {
			var grads [][]float32
			for _, sharded := range []bool{false, true} {
				tr := newTestOracle(t)
				loss, err := NewLoss(kind, tr.b, LossConfig{Temperature: 0.5, TrainImages: 64, Gamma: GammaSchedule{Gamma: 0.9}})
				if err != nil {
					t.Fatal(err)
				}
				tr.oracle.SetLoss(loss)
				var o mlmc.Oracle[tensor.Buffer] = tr.oracle
				if sharded {
					sh := NewSharded(tr.oracle, oneRank{})
					defer sh.Free()
					o = sh
				}
				out := tr.b.Alloc(tr.model.Params().Len())
				defer tr.b.Free(out)
				for range 2 { // SogCLR's second draw reads the u the first wrote
					s, _, err := o.Draw(3)
					if err != nil {
						t.Fatal(err)
					}
					if err := o.Eval(s, mlmc.Current, false, 0.5, out); err != nil {
						t.Fatal(err)
					}
					o.Release(s)
				}
				if tr.oracle.Passes() != 2 {
					t.Errorf("sharded %v: %d passes, want 2", sharded, tr.oracle.Passes())
				}
				grads = append(grads, slices.Clone(cpu.Data(out)))
			}
			if !slices.Equal(grads[0], grads[1]) {
				t.Error("the sharded oracle's gradient on one rank differs from the oracle's")
			}
		})
	}
}
