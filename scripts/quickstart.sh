#!/usr/bin/env bash
# Sets up a fresh machine and runs the main job: the CPU quick preset (train a
# narrow ResNet-18 on a CIFAR-10 subset, then linear-probe it against the same
# network at initialisation). Extra arguments go to `simclr train`.
#
#   scripts/quickstart.sh [--data-dir DIR] [simclr train flags...]
#
# CIFAR-10 is copied from the local mirror folder $SIMCLR_DATA_MIRROR when
# set (fetch_data.sh --from: the official archive, its unpacked folder or the
# JPEG copy), else from a shared/data/cifar10 mirror beside the checkout when
# there is one, else downloaded from the official site.
set -euo pipefail
cd "$(dirname "$0")/.."

data_dir=data-cache
if [ "${1:-}" = "--data-dir" ]; then data_dir=$2; shift 2; fi

# OpenBLAS is optional (the CPU backend falls back to its own SGEMM) but faster.
if ! ldconfig -p 2>/dev/null | grep -q libopenblas.so.0 && command -v apt-get >/dev/null 2>&1; then
  sudo_cmd=""; [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  echo "quickstart: installing libopenblas0 (optional; continuing without it on failure)"
  # apt_get runs apt-get, waiting (at most apt_wait seconds in all) while
  # another install holds apt's or dpkg's lock, as on a machine still
  # running its first-boot updates, rather than giving up at once.
  apt_wait=${SIMCLR_APT_WAIT:-180}
  apt_deadline=$((SECONDS + apt_wait))
  apt_get() {
    local out
    while :; do
      if out=$($sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=10 "$@" 2>&1); then
        return 0
      fi
      if ! grep -qi -e 'could not get lock' -e 'unable to acquire' -e 'another process using it' <<<"$out" ||
        [ "$SECONDS" -ge "$apt_deadline" ]; then
        return 1
      fi
      echo "quickstart: another install holds apt's lock; waiting (up to ${apt_wait} s in all)"
      sleep 5
    done
  }
  # A fresh container has empty package lists: install would find nothing.
  if [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e '^lock$' -e '^partial$')" ]; then
    apt_get update -qq || echo "quickstart: apt-get update failed"
  fi
  apt_get install -y -qq libopenblas0 ||
    echo "quickstart: could not install libopenblas0; using the pure-Go SGEMM"
fi

mirror=()
if [ -n "${SIMCLR_DATA_MIRROR:-}" ]; then
  mirror=(--from "$SIMCLR_DATA_MIRROR")
elif [ -d ../shared/data/cifar10 ]; then
  mirror=(--from ../shared/data/cifar10)
fi
scripts/fetch_data.sh cifar10 --dir "$data_dir" ${mirror[@]+"${mirror[@]}"}

go build -o simclr ./cmd/simclr
./simclr train --preset quick --data-dir "$data_dir" "$@"
