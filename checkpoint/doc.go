// Package checkpoint reads and writes safetensors files
// (https://huggingface.co/docs/safetensors) of float32 tensors, atomically:
// a file is written to a temporary name in the same folder, synced, and
// renamed over the old one, so a crash or a kill in the middle of a write
// leaves the previous checkpoint intact and loadable.
//
// Format: an 8-byte little-endian header length n, n bytes of JSON
// {"__metadata__": {string: string}, NAME: {"dtype": "F32", "shape": [...],
// "data_offsets": [begin, end]}, ...} padded with spaces to a multiple of 8,
// then the raw little-endian tensor data, offsets relative to its start.
package checkpoint
