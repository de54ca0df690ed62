// Package features is the labelled feature matrix that the evaluators (kNN,
// linear probe) consume and that eval.Extract produces from a network. It
// is a leaf, so the classifiers do not depend on the model.
package features

// Features is an N x Dim row-major feature matrix with a label per row.
type Features struct {
	X      []float32
	Y      []int32
	N, Dim int
}
