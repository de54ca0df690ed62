// Package layering holds the test that keeps the module's import graph in
// the layers CONTRIBUTING.md's "Layout" section states: a package imports only
// packages of lower layers, so the backends sit beside the model rather
// than under it, and nothing below the trainer reaches up into it.
package layering
