#!/usr/bin/env bash
# make_splits.sh — the study's data, as two image folders (simclr --dataset
# folder:PATH) that share one training set, made of hard links into the JPEG
# copy of CIFAR-10 (scripts/fetch_data.sh cifar10), so nothing is copied:
#
#   DIR/val/train/CLASS    500 training images per class (5,000): what every run trains on
#   DIR/val/test/CLASS     the next 100 training images per class (1,000): the VALIDATION
#                          split every tuning choice is made on
#   DIR/final/train        the same 5,000 training images
#   DIR/final/test/CLASS   200 test images per class (2,000): scored once per final
#                          configuration, never used for a choice
#
# The main branch had no --val-split when the study started, hence the folders.
# Usage: studies/small-batches/scripts/make_splits.sh [JPEG_DIR] [DIR]
#   defaults: data-cache/cifar10-jpeg data-cache/study
set -euo pipefail
src=${1:-data-cache/cifar10-jpeg}
dst=${2:-data-cache/study}
[[ -d $src/train && -d $src/test ]] || { echo "make_splits.sh: $src has no train/ and test/; run scripts/fetch_data.sh cifar10 first" >&2; exit 1; }
rm -rf "$dst"
for cls in $(ls "$src/train"); do
	mkdir -p "$dst/val/train/$cls" "$dst/val/test/$cls" "$dst/final/train/$cls" "$dst/final/test/$cls"
	mapfile -t train < <(ls "$src/train/$cls" | sort)
	mapfile -t test < <(ls "$src/test/$cls" | sort)
	for f in "${train[@]:0:500}"; do
		ln "$src/train/$cls/$f" "$dst/val/train/$cls/$f"
		ln "$src/train/$cls/$f" "$dst/final/train/$cls/$f"
	done
	for f in "${train[@]:500:100}"; do ln "$src/train/$cls/$f" "$dst/val/test/$cls/$f"; done
	for f in "${test[@]:0:200}"; do ln "$src/test/$cls/$f" "$dst/final/test/$cls/$f"; done
done
for s in val/train val/test final/train final/test; do
	printf 'make_splits.sh: %-12s %5d images\n' "$s" "$(find "$dst/$s" -type f | wc -l)"
done
