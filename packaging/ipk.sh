#!/bin/sh
# ipk.sh VERSION DIST: build linerate_VERSION_ARCH.ipk, OpenWrt's opkg
# package (OpenWrt 23.05 and 24.10), for each architecture below in DIST
# from the static binaries `make release` left there, with tar and gzip
# alone, laid out as OpenWrt's ipkg-build lays it out: a gzipped tar of
# ./debian-binary ("2.0"), ./data.tar.gz and ./control.tar.gz, each tar
# GNU format, root-owned, sorted and dated by SOURCE_DATE_EPOCH.
#
# Each package holds the binary (/usr/bin/linerate), the agent's procd
# init script (/etc/init.d/linerate-serve, not enabled: no /etc/rc.d link)
# and its UCI config (/etc/config/linerate, mode 600, a conffile), with a
# postinst that restarts an enabled agent and a prerm that stops and
# disables it. One binary serves several OpenWrt architectures: Go
# targets an instruction set, not a CPU.
set -eu

version=$1
dist=$2
maintainer=${IPK_MAINTAINER:-linerate developers <linerate-dev@example.org>}
here=$(cd "$(dirname "$0")" && pwd)

# OpenWrt architecture : binary in DIST. aarch64 and x86_64 boxes have
# room for the full build; 32-bit arm and mips routers get the small one
# (docs/openwrt.md).
arches="aarch64_cortex-a53:linerate-linux-arm64 aarch64_cortex-a72:linerate-linux-arm64
aarch64_cortex-a76:linerate-linux-arm64 aarch64_generic:linerate-linux-arm64
x86_64:linerate-linux-amd64 arm_cortex-a7_neon-vfpv4:linerate-small-linux-armv7
mipsel_24kc:linerate-small-linux-mipsle mips_24kc:linerate-small-linux-mips"

# The version as deb.sh makes it (opkg compares versions as dpkg does): a
# release tag's digits, else 0~git and the commit.
v=${version#v}
case $v in
[0-9]*.[0-9]*) ;;
*) v="0~git$v" ;;
esac
ipkversion=$(printf '%s' "$v" | tr -c 'A-Za-z0-9.+~\n' '+')

epoch="${SOURCE_DATE_EPOCH:-$(git -C "$here" log -1 --format=%ct 2>/dev/null || date +%s)}"
# The archives' entries: sorted, root's, dated, GNU format as ipkg-build
# writes them (opkg's tar reader knows GNU and ustar headers).
tarc() { tar --format=gnu --numeric-owner --owner=0 --group=0 --sort=name --mtime="@$epoch" "$@"; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for pair in $arches; do
	arch=${pair%%:*}
	bin=$dist/${pair#*:}
	[ -f "$bin" ] || { echo "ipk.sh: no $bin for $arch" >&2; exit 1; }
	ctl=$work/$arch/control
	install -d -m 755 "$ctl"
	# The data of one binary is the same whatever the architecture's name:
	# packed once.
	data=$work/${pair#*:}.data.tar.gz
	if [ ! -f "$data" ]; then
		root=$work/${pair#*:}.root
		install -D -m 755 "$bin" "$root/usr/bin/linerate"
		install -D -m 755 "$here/ipk/linerate-serve.init" "$root/etc/init.d/linerate-serve"
		install -D -m 600 "$here/ipk/linerate.config" "$root/etc/config/linerate"
		tarc -C "$root" -cf - . | gzip -n >"$data"
	fi
	cp "$data" "$work/$arch/data.tar.gz"
	# Installed-Size as ipkg-build counts it: the bytes of the data tar.
	size=$(gzip -dc "$data" | wc -c)
	sed "s/@VERSION@/$ipkversion/; s/@ARCH@/$arch/; s/@SIZE@/$size/; s/@EPOCH@/$epoch/; s|@MAINTAINER@|$maintainer|" \
		"$here/ipk/control" >"$ctl/control"
	echo /etc/config/linerate >"$ctl/conffiles"
	install -m 755 "$here/ipk/postinst" "$ctl/postinst"
	install -m 755 "$here/ipk/prerm" "$ctl/prerm"
	chmod 644 "$ctl/control" "$ctl/conffiles"
	tarc -C "$ctl" -cf - . | gzip -n >"$work/$arch/control.tar.gz"
	echo 2.0 >"$work/$arch/debian-binary"
	out=$dist/linerate_${ipkversion}_$arch.ipk
	tarc -C "$work/$arch" -cf - ./debian-binary ./data.tar.gz ./control.tar.gz | gzip -n >"$out"
	echo "$out"
done
