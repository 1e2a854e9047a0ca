#!/bin/sh
# ipk-check.sh DIST: check the OpenWrt packages ipk.sh built in DIST
# (make test runs it after make release): TestIPKRelease reads each as
# opkg would, checks its architecture's binary (ELF machine, class, byte
# order) and that the small builds stay under their limit (8 MiB: docs/openwrt.md).
set -eu
dist=$(cd "$1" && pwd)
cd "$(dirname "$0")"
if ! out=$(LINERATE_IPK_DIST=$dist go test -count=1 -run '^TestIPKRelease$' . 2>&1); then
	printf 'ipk-check.sh:\n%s\n' "$out" >&2
	exit 1
fi
echo "ipk-check.sh: $(ls "$dist"/*.ipk | wc -l) OpenWrt packages: layout, architecture and size are right"
