#!/usr/bin/env bash
# prepare.sh — run HERE (the machine with Go), before the GPU checks: fills
# .gpu/ with everything scripts/gpu/run_all.sh needs on the GPU machine, which
# has no Go and no internet:
#
#   .gpu/simclr               the CLI, CGO_ENABLED=0 (purego loads the CUDA libraries)
#   .gpu/cuda.test            go test -c ./backend/cuda (parity tests and benchmarks)
#   .gpu/collective.test      go test -c ./collective (NCCL's collectives on the GPU)
#   .gpu/cifar10-jpeg.tar.gz  the shared JPEG copy of CIFAR-10 (../shared does not travel)
#   .gpu/benchmarks/          the PyTorch reference (benchmarks/)
#   .gpu/BUILD.txt            commit, dirty files and Go version of this build
#
# .gpu/ is ignored by git (.gitignore and .git/info/exclude), so it travels
# only when it is copied to the GPU machine with the working tree. See docs/gpu.md.
#
# Usage: scripts/gpu/prepare.sh [--no-data]
set -euo pipefail
cd "$(dirname "$0")/../.."

with_data=1
case "${1:-}" in
"") ;;
--no-data) with_data=0 ;;
-h | --help)
	sed -n '2,17p' "$0"
	exit 0
	;;
*)
	echo "prepare.sh: unknown argument $1 (try --help)" >&2
	exit 2
	;;
esac

die() {
	echo "prepare.sh: $*" >&2
	exit 1
}

command -v go >/dev/null || die "go is not on PATH: run this on the development machine, not the GPU one"

# Keep .gpu out of git even where .gitignore changes: .git/info/exclude is local.
git_dir=$(git rev-parse --git-dir 2>/dev/null) || die "not inside a git checkout"
mkdir -p "$git_dir/info"
touch "$git_dir/info/exclude"
grep -qxF '/.gpu/' "$git_dir/info/exclude" || echo '/.gpu/' >>"$git_dir/info/exclude"

mkdir -p .gpu
# The GPU machine is x86-64 Linux whatever this one is.
export CGO_ENABLED=0 GOOS=linux GOARCH=amd64

echo "prepare.sh: building .gpu/simclr"
go build -trimpath -ldflags="-s -w" -o .gpu/simclr ./cmd/simclr || die "go build ./cmd/simclr failed (another engineer's package may be mid-edit: retry, or build what compiles)"

echo "prepare.sh: building .gpu/cuda.test"
go test -c -trimpath -ldflags="-s -w" -o .gpu/cuda.test ./backend/cuda || die "go test -c ./backend/cuda failed"

echo "prepare.sh: building .gpu/collective.test"
go test -c -trimpath -ldflags="-s -w" -o .gpu/collective.test ./collective || die "go test -c ./collective failed"

if [[ $with_data == 1 ]]; then
	src=../shared/data/cifar10/cifar10-jpeg.tar.gz
	[[ -f $src ]] || die "$src is missing: the short training run needs it (or pass --no-data)"
	if ! cmp -s "$src" .gpu/cifar10-jpeg.tar.gz 2>/dev/null; then
		echo "prepare.sh: copying $src"
		cp "$src" .gpu/cifar10-jpeg.tar.gz
		chmod u+w .gpu/cifar10-jpeg.tar.gz
	fi
fi

rm -rf .gpu/benchmarks
cp -r benchmarks .gpu/benchmarks
find .gpu/benchmarks -name __pycache__ -prune -exec rm -rf {} +

{
	echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) by scripts/gpu/prepare.sh"
	echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)"
	echo "go $(go env GOVERSION)"
	echo "uncommitted changes:"
	git status --short --untracked-files=no 2>/dev/null | sed 's/^/  /'
} >.gpu/BUILD.txt

# What is copied to the GPU machine is kept under 64 MiB: .gpu plus the rest of the working
# tree (tracked and untracked-but-not-ignored files).
gpu_kib=$(du -sk .gpu | cut -f1)
# (stat skips files deleted in the working tree but still in the index.)
tree_kib=$(git ls-files -z --cached --others --exclude-standard | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print int(s / 1024)}' || true)
tree_kib=${tree_kib:-0}
total_mib=$(((gpu_kib + tree_kib) / 1024))
ls -l .gpu
echo "prepare.sh: .gpu is $((gpu_kib / 1024)) MiB, the rest of the working tree $((tree_kib / 1024)) MiB: ${total_mib} MiB of the 64 MiB copied to the GPU machine"
if ((total_mib >= 64)); then
	die "over the 64 MiB limit: drop the data (--no-data) or untracked files from the tree"
fi
echo "prepare.sh: ready. Copy the working tree with .gpu/ to the GPU machine and run there: bash scripts/gpu/run_all.sh (or bash scripts/gpu/paper_table.sh for the paper's table)"
