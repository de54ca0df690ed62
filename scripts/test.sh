#!/usr/bin/env bash
# The project's test command (README "Tests"): go test ./... with the test
# data found.
#
# The data tests read fixtures laid out as cifar10/, cifar100/, svhn/ (see
# docs/definitions.md, "Test data"): from $SIMCLR_TEST_DATA when set, else
# from ../shared/data beside the checkout. In a clone with neither, this
# script derives what it can from the official archives, downloaded once by
# scripts/fetch_data.sh into a cache ($XDG_CACHE_HOME/simclr-test, or
# ~/.cache/simclr-test; SIMCLR_DATA_MIRROR names a local folder to copy the
# archives from instead, as fetch_data.sh --from), and points
# SIMCLR_TEST_DATA there. Offline, it says in one line what is missing; the
# tests that need it then skip, except under CI=true, where a missing
# fixture fails its test.
set -euo pipefail
cd "$(dirname "$0")/.."

# derive CACHE: fill CACHE/data with the fixtures that can be made from the
# official archives (fetch_data.sh's output goes to CACHE/fetch.log).
derive() {
	local cache=$1 raw=$1/official data=$1/data from=()
	[ -z "${SIMCLR_DATA_MIRROR:-}" ] || from=(--from "$SIMCLR_DATA_MIRROR")
	mkdir -p "$data/cifar10" "$data/cifar100" "$data/svhn"
	if scripts/fetch_data.sh cifar10 cifar100 --dir "$raw" ${from[@]+"${from[@]}"} >>"$cache/fetch.log" 2>&1; then
		local c10=$raw/cifar-10-batches-bin c100=$raw/cifar-100-binary
		head -c $((1017 * 3073)) "$c10/test_batch.bin" >"$data/cifar10/test_batch.prefix1017.bin"
		# The label is the first byte of each 3,073-byte record.
		perl -e '$/ = \3073; while (<>) { print substr($_, 0, 1) }' "$c10/test_batch.bin" >"$data/cifar10/labels_test.u8"
		perl -e '$/ = \3073; while (<>) { print substr($_, 0, 1) }' "$c10"/data_batch_{1,2,3,4,5}.bin >"$data/cifar10/labels_train.u8"
		# The official batches stand in for the JPEG rebuild: same layout,
		# exact pixels.
		printf '#!/bin/sh\n# Copies the official CIFAR-10 batches (scripts/test.sh).\nmkdir -p "$1" && cp -R %q "$1/"\n' "$c10" >"$data/cifar10/rebuild.sh"
		head -c $((1117 * 3074)) "$c100/train.bin" >"$data/cifar100/train.prefix1117.bin"
		head -c $((916 * 3074)) "$c100/test.bin" >"$data/cifar100/test.prefix916.bin"
		cp "$c100/fine_label_names.txt" "$c100/coarse_label_names.txt" "$data/cifar100/"
	fi
	if scripts/fetch_data.sh svhn --dir "$raw" ${from[@]+"${from[@]}"} >>"$cache/fetch.log" 2>&1; then
		head -c 2686976 "$raw/svhn/train_32x32.mat" >"$data/svhn/train_32x32.truncated.mat"
	fi
}

if [ -z "${SIMCLR_TEST_DATA:-}" ] && [ ! -d ../shared/data ]; then
	cache="${XDG_CACHE_HOME:-$HOME/.cache}/simclr-test"
	if [ ! -f "$cache/data/cifar100/test.prefix916.bin" ] || [ ! -f "$cache/data/svhn/train_32x32.truncated.mat" ]; then
		echo "test.sh: no ../shared/data; fetching the official archives into $cache (once)" >&2
		mkdir -p "$cache"
		derive "$cache" || true
	fi
	export SIMCLR_TEST_DATA="$cache/data"
	# Two fixtures are not official files (the JPEG copy of CIFAR-10 and an
	# SVHN sample with placeholder labels) and cannot be derived.
	missing=()
	for f in cifar10/test_batch.prefix1017.bin cifar10/labels_test.u8 cifar10/labels_train.u8 cifar10/rebuild.sh \
		cifar10/cifar10-jpeg.tar.gz cifar100/train.prefix1117.bin cifar100/test.prefix916.bin \
		svhn/sample_32x32.mat svhn/train_32x32.truncated.mat; do
		[ -e "$SIMCLR_TEST_DATA/$f" ] || missing+=("$f")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		what="the tests that need it skip"
		[ "${CI:-}" != true ] || what="CI=true: the tests that need it fail"
		echo "test.sh: test data missing ($what; fetch log: $cache/fetch.log): ${missing[*]}" >&2
	fi
fi

CGO_ENABLED=0 go test -count=1 -timeout 15m ./... "$@"
