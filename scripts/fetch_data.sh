#!/usr/bin/env bash
# fetch_data.sh — download (or copy from a local mirror) the data sets simclr
# reads, check them against the official MD5 sums, and unpack them into the
# layout the loaders expect:
#
#   DIR/cifar-10-batches-bin/   cifar10   (cifar-10-binary.tar.gz)
#   DIR/cifar-100-binary/       cifar100  (cifar-100-binary.tar.gz)
#   DIR/svhn/{train,test}_32x32.mat        svhn
#   DIR/svhn/extra_32x32.mat               svhn-extra
#   DIR/cifar10-jpeg/{train,test}/CLASS/   cifar10 from a mirror holding
#                                          cifar10-jpeg.tar.gz (our shared
#                                          JPEG copy of CIFAR-10)
#   DIR/dro/*.txt, *.csv                   dro (Sinkhorn DRO regression sets,
#                                          from a mirror folder only)
#
# Usage: scripts/fetch_data.sh DATASET... [--dir DIR] [--from MIRROR]
# Run with --help for details.
set -euo pipefail

readonly CIFAR10_URL="https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
readonly CIFAR100_URL="https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz"
readonly SVHN_URL="http://ufldl.stanford.edu/housenumbers"

usage() {
	cat <<'USAGE'
Usage: scripts/fetch_data.sh DATASET... [--dir DIR] [--from MIRROR]

Datasets: cifar10, cifar100, svhn (train and test), svhn-extra (the 531,131
extra SVHN training images, 1.3 GB), dro (the regression sets of
examples/dro: LIBSVM housing_scale.txt, mg_scale.txt, mpg_scale.txt, UCI
bike_hour.csv and gas_turbine_gt_2011..2015.csv; copied from --from MIRROR
and checked against their SHA-256 sums, never downloaded).

  --dir DIR      where to put the data (default: data-cache, the default
                 --data-dir of simclr; kept out of git by .gitignore)
  --from MIRROR  copy from a local folder instead of downloading. MIRROR may
                 hold the official archives (cifar-10-binary.tar.gz,
                 cifar-100-binary.tar.gz, *_32x32.mat; MD5 sums are checked),
                 already unpacked folders (cifar-10-batches-bin/,
                 cifar-100-binary/), or, for cifar10, cifar10-jpeg.tar.gz
                 (the shared JPEG copy, unpacked to DIR/cifar10-jpeg/).
  -h, --help     show this help

Downloads resume where they stopped (curl -C - or wget -c): re-run after a
failure. Every archive is checked against its official MD5 sum before use.

Examples:
  scripts/fetch_data.sh cifar10 cifar100 --dir data-cache
  scripts/fetch_data.sh cifar10 --dir data-cache --from ../shared/data/cifar10
USAGE
}

die() {
	printf 'fetch_data.sh: %s\n' "$*" >&2
	exit 1
}

say() {
	printf 'fetch_data.sh: %s\n' "$*"
}

# md5_of FILE prints the MD5 sum of FILE.
md5_of() {
	if command -v md5sum >/dev/null 2>&1; then
		md5sum "$1" | cut -d' ' -f1
	elif command -v md5 >/dev/null 2>&1; then
		md5 -q "$1"
	else
		die "neither md5sum nor md5 found: install coreutils to check downloads"
	fi
}

# check_md5 FILE WANT [DELETE]: fail with a clear message when FILE's sum is
# not WANT; with DELETE=yes the bad file is removed so a re-run starts over.
check_md5() {
	local file=$1 want=$2 delete=${3:-no} got
	got=$(md5_of "$file")
	if [[ "$got" != "$want" ]]; then
		if [[ "$delete" == yes ]]; then
			rm -f -- "$file"
			die "checksum mismatch for $file: MD5 $got, want $want (the official sum); the file was deleted: re-run to download it again"
		fi
		die "checksum mismatch for $file: MD5 $got, want $want (the official sum): not the official archive or corrupt; replace it"
	fi
	say "checksum ok: $file"
}

# download URL DEST: fetch URL to DEST, resuming a partial DEST.part.
download() {
	local url=$1 dest=$2 rc=0
	if [[ -f "$dest" ]]; then
		return 0
	fi
	mkdir -p "$(dirname "$dest")"
	say "downloading $url"
	if command -v curl >/dev/null 2>&1; then
		curl --fail --location --retry 3 -C - -o "$dest.part" "$url" || rc=$?
	elif command -v wget >/dev/null 2>&1; then
		wget -c -O "$dest.part" "$url" || rc=$?
	else
		die "neither curl nor wget found: install one, or download $url yourself and use --from FOLDER"
	fi
	if [[ $rc -ne 0 ]]; then
		die "download of $url failed (exit status $rc); re-run to resume, or download it elsewhere and use --from FOLDER"
	fi
	mv -- "$dest.part" "$dest"
}

# obtain NAME URL MD5: put the official archive NAME into $downloads (copy
# from the mirror or download) and check its MD5; prints its path.
obtain() {
	local name=$1 url=$2 md5=$3 dest
	if [[ -n "$mirror" ]]; then
		[[ -f "$mirror/$name" ]] || die "$mirror/$name not found (the mirror holds neither the archive nor an unpacked folder for it)"
		check_md5 "$mirror/$name" "$md5"
		archive="$mirror/$name"
		return 0
	fi
	dest="$downloads/$name"
	download "$url" "$dest"
	check_md5 "$dest" "$md5" yes
	archive="$dest"
}

# unpack_tar ARCHIVE DEST SUBDIR: extract ARCHIVE into DEST and check that
# DEST/SUBDIR appeared.
unpack_tar() {
	local archive=$1 dest=$2 subdir=$3
	mkdir -p "$dest"
	tar -xzf "$archive" -C "$dest" || die "unpacking $archive failed: corrupt archive; delete it and re-run"
	[[ -d "$dest/$subdir" ]] || die "$archive did not unpack to $dest/$subdir: not the expected archive"
	say "unpacked $archive into $dest/$subdir"
}

# copy_dir SRC DEST: copy an unpacked folder from the mirror.
copy_dir() {
	local src=$1 dest=$2
	mkdir -p "$(dirname "$dest")"
	rm -rf -- "$dest.tmp"
	cp -R -- "$src" "$dest.tmp"
	mv -- "$dest.tmp" "$dest"
	say "copied $src to $dest"
}

fetch_cifar10() {
	local out="$dir/cifar-10-batches-bin"
	if [[ -f "$out/test_batch.bin" ]]; then
		say "cifar10: $out already there"
		return 0
	fi
	if [[ -n "$mirror" && -f "$mirror/cifar-10-batches-bin/test_batch.bin" ]]; then
		copy_dir "$mirror/cifar-10-batches-bin" "$out"
		return 0
	fi
	if [[ -n "$mirror" && ! -f "$mirror/cifar-10-binary.tar.gz" && -f "$mirror/cifar10-jpeg.tar.gz" ]]; then
		local jpeg="$dir/cifar10-jpeg"
		if [[ -d "$jpeg/train/airplane" && -d "$jpeg/test/truck" ]]; then
			say "cifar10: $jpeg already there"
			return 0
		fi
		gzip -t "$mirror/cifar10-jpeg.tar.gz" || die "$mirror/cifar10-jpeg.tar.gz is corrupt (gzip -t failed)"
		rm -rf -- "$jpeg.tmp"
		unpack_tar "$mirror/cifar10-jpeg.tar.gz" "$jpeg.tmp" train/airplane
		[[ -d "$jpeg.tmp/test/airplane" ]] || die "$mirror/cifar10-jpeg.tar.gz has no test/ split"
		rm -rf -- "$jpeg"
		mv -- "$jpeg.tmp" "$jpeg"
		say "cifar10: JPEG copy in $jpeg (figures from it are \"CIFAR-10 (JPEG q75 rebuild)\")"
		return 0
	fi
	obtain cifar-10-binary.tar.gz "$CIFAR10_URL" c32a1d4ab5d03f1284b67883e8d87530
	unpack_tar "$archive" "$dir" cifar-10-batches-bin
}

fetch_cifar100() {
	local out="$dir/cifar-100-binary"
	if [[ -f "$out/test.bin" ]]; then
		say "cifar100: $out already there"
		return 0
	fi
	if [[ -n "$mirror" && -f "$mirror/cifar-100-binary/test.bin" ]]; then
		copy_dir "$mirror/cifar-100-binary" "$out"
		return 0
	fi
	obtain cifar-100-binary.tar.gz "$CIFAR100_URL" 03b5dce01913d631647c71ecec9e9cb8
	unpack_tar "$archive" "$dir" cifar-100-binary
}

# fetch_mat NAME MD5: one SVHN .mat file into DIR/svhn/.
fetch_mat() {
	local name=$1 md5=$2 out="$dir/svhn/$1"
	if [[ -f "$out" ]]; then
		say "svhn: $out already there"
		return 0
	fi
	mkdir -p "$dir/svhn"
	if [[ -n "$mirror" && ! -f "$mirror/$name" && -f "$mirror/svhn/$name" ]]; then
		mirror_file="$mirror/svhn/$name"
	elif [[ -n "$mirror" ]]; then
		mirror_file="$mirror/$name"
	fi
	if [[ -n "$mirror" ]]; then
		[[ -f "$mirror_file" ]] || die "$mirror/$name not found (nor $mirror/svhn/$name)"
		check_md5 "$mirror_file" "$md5"
		cp -- "$mirror_file" "$out.tmp"
		mv -- "$out.tmp" "$out"
		say "copied $mirror_file to $out"
		return 0
	fi
	# The .mat files are used as downloaded: fetch straight into place.
	download "$SVHN_URL/$name" "$downloads/$name"
	check_md5 "$downloads/$name" "$md5" yes
	mv -- "$downloads/$name" "$out"
	say "svhn: $out"
}

# fetch_dro: the DRO regression files from the mirror into DIR/dro, each
# checked against the SHA-256 sum of the copy the experiment was run on.
fetch_dro() {
	[[ -n "$mirror" ]] || die "dro: no download: name a folder holding housing_scale.txt, mg_scale.txt, mpg_scale.txt, bike_hour.csv and gas_turbine_gt_2011.csv..gt_2015.csv with --from (LIBSVM's regression sets and UCI's Bike Sharing and Gas Turbine files, renamed)"
	command -v sha256sum >/dev/null 2>&1 || die "dro: sha256sum not found (coreutils)"
	local src=$mirror
	[[ -f "$src/housing_scale.txt" || ! -d "$mirror/dro" ]] || src=$mirror/dro
	mkdir -p "$dir/dro"
	local name sum got
	while read -r sum name; do
		[[ -f "$src/$name" ]] || die "dro: $src/$name not found"
		got=$(sha256sum "$src/$name" | cut -d' ' -f1)
		[[ "$got" == "$sum" ]] || die "dro: $src/$name has SHA-256 $got, not $sum: it is not the file the experiment uses"
		cp "$src/$name" "$dir/dro/$name"
	done <<'SUMS'
bbacd2f526a038499717d5dc4b8895e6baf1e2351895b9360a84bcb31e104476 housing_scale.txt
f6eea42e3b3e5053c34c974cf364bf51d23207de0b6ae7224bba9c5d0959a223 mg_scale.txt
e15f343cfd6bd926596fa80c241428a3b025a82815bce8ccb88160f0d1cee71d mpg_scale.txt
b03a2d02e8c10f435c43c7f0b358b7e34a003afea53dbc37f0183f2763295133 bike_hour.csv
d87ceef9aa59533cc7d924d10de241b1b06ecd11f9b26bab59191ea0f8a76b9a gas_turbine_gt_2011.csv
be54b9d0e1a7de40c55d32fa489e75de892b000c066b5a09f09a19124ee29100 gas_turbine_gt_2012.csv
13c437bb440ec2045bd12057e6654c41dd4107a661eac16ba2e878e897a08f9e gas_turbine_gt_2013.csv
c2a03c92c9c3207aad0c6be7de8d9b5b4bfa4720ad0efb2c1f21b6cec4d3f3fa gas_turbine_gt_2014.csv
1563b5829506fb157f18e86cf5c30f23366e58dd4d843870da85cfe07be0c642 gas_turbine_gt_2015.csv
SUMS
	say "dro: $dir/dro (go run ./examples/dro --data-dir $dir/dro)"
}

main() {
	dir=data-cache
	mirror=""
	archive=""
	mirror_file=""
	local -a sets=()
	while [[ $# -gt 0 ]]; do
		case $1 in
		--dir)
			[[ $# -ge 2 ]] || die "--dir needs a folder"
			dir=$2
			shift 2
			;;
		--dir=*)
			dir=${1#--dir=}
			shift
			;;
		--from)
			[[ $# -ge 2 ]] || die "--from needs a folder"
			mirror=$2
			shift 2
			;;
		--from=*)
			mirror=${1#--from=}
			shift
			;;
		-h | --help)
			usage
			exit 0
			;;
		cifar10 | cifar100 | svhn | svhn-extra | dro)
			sets+=("$1")
			shift
			;;
		*)
			usage >&2
			die "unknown argument '$1' (datasets: cifar10, cifar100, svhn, svhn-extra, dro)"
			;;
		esac
	done
	[[ ${#sets[@]} -gt 0 ]] || {
		usage >&2
		die "name at least one dataset: cifar10, cifar100, svhn, svhn-extra, dro"
	}
	[[ -n "$dir" ]] || die "--dir is empty: name the folder to put the data in"
	if [[ -n "$mirror" && ! -d "$mirror" ]]; then
		die "--from $mirror: no such folder"
	fi
	mkdir -p "$dir"
	downloads="$dir/downloads"
	local set
	for set in "${sets[@]}"; do
		case $set in
		cifar10) fetch_cifar10 ;;
		cifar100) fetch_cifar100 ;;
		svhn)
			fetch_mat train_32x32.mat e26dedcc434d2e4c54c9b2d4a06d8373
			fetch_mat test_32x32.mat eb5a983be6a315427106f1b164d9cef3
			;;
		svhn-extra) fetch_mat extra_32x32.mat a93ce644f1a588dc4d68dda5feec44a7 ;;
		dro) fetch_dro ;;
		esac
	done
	say "done: data in $dir (simclr --data-dir $dir)"
}

main "$@"
