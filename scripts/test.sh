#!/usr/bin/env bash
# The project's test command (README "Tests"). Reads fixtures from ../shared/data.
set -euo pipefail
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go test -count=1 -timeout 15m ./... "$@"
