#!/bin/sh
# deb.sh VERSION DIST: build linerate_VERSION_ARCH.deb for amd64, arm64
# and armhf in DIST from the static binaries `make release` left there
# (linerate-linux-amd64, -arm64, -armv7), with dpkg-deb alone (no
# debhelper: the package is one static binary and files made from it).
#
# Each package holds the binary, a man page per command and the bash, zsh
# and fish completions (made once by the binary of this machine's
# architecture: `linerate package-files`), the agent's systemd unit
# (linerate-serve.service, not enabled) and its settings file
# /etc/default/linerate (a conffile, mode 600: it holds the secret).
set -eu

version=$1
dist=$2
# Who answers for the package (Maintainer: and the changelog); set
# DEB_MAINTAINER to a real address when publishing.
maintainer=${DEB_MAINTAINER:-linerate developers <linerate-dev@example.org>}
here=$(cd "$(dirname "$0")" && pwd)

# A Debian version starts with a digit and holds no '-' (a native
# package: no Debian revision). git describe gives v1.2.3, v1.2.3-4-gabc
# or, without tags, abc1234[-dirty] (which may start with a digit too).
v=${version#v}
case $v in
[0-9]*.[0-9]*) ;;          # a release tag, v1.2 or 1.2.3
*) v="0~git$v" ;;          # a commit: before any release
esac
debversion=$(printf '%s' "$v" | tr -c 'A-Za-z0-9.+~\n' '+')

export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "$here" log -1 --format=%ct 2>/dev/null || date +%s)}"

case $(uname -m) in
x86_64) native=amd64 ;;
aarch64) native=arm64 ;;
armv7l | armv8l) native=armv7 ;;
*) echo "deb.sh: no linerate binary runs on $(uname -m) to write the man pages" >&2; exit 1 ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$dist/linerate-linux-$native" package-files "$work/files"

for pair in amd64:amd64 arm64:arm64 armhf:armv7; do
	arch=${pair%%:*}
	bin=$dist/linerate-linux-${pair#*:}
	root=$work/$arch
	install -D -m 755 "$bin" "$root/usr/bin/linerate"
	install -d -m 755 "$root/usr/share/man/man1"
	for page in "$work"/files/man1/*.1; do
		gzip -9n <"$page" >"$root/usr/share/man/man1/$(basename "$page").gz"
	done
	install -D -m 644 "$work/files/completions/linerate.bash" "$root/usr/share/bash-completion/completions/linerate"
	install -D -m 644 "$work/files/completions/_linerate" "$root/usr/share/zsh/vendor-completions/_linerate"
	install -D -m 644 "$work/files/completions/linerate.fish" "$root/usr/share/fish/vendor_completions.d/linerate.fish"
	install -D -m 644 "$here/linerate-serve.service" "$root/lib/systemd/system/linerate-serve.service"
	install -D -m 600 "$here/default" "$root/etc/default/linerate"
	install -D -m 644 "$here/copyright" "$root/usr/share/doc/linerate/copyright"
	sed "s/@VERSION@/$debversion/; s/@DATE@/$(date -u -R -d "@$SOURCE_DATE_EPOCH")/; s|@MAINTAINER@|$maintainer|" "$here/changelog" |
		gzip -9n >"$root/usr/share/doc/linerate/changelog.gz"
	chmod 644 "$root/usr/share/doc/linerate/changelog.gz"
	install -D -m 644 "$here/lintian-overrides" "$root/usr/share/lintian/overrides/linerate"

	install -d -m 755 "$root/DEBIAN"
	for s in postinst prerm postrm; do
		install -m 755 "$here/$s" "$root/DEBIAN/$s"
	done
	echo /etc/default/linerate >"$root/DEBIAN/conffiles"
	(cd "$root" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -print | sed 's|^\./||' | sort | xargs md5sum) >"$root/DEBIAN/md5sums"
	size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
	sed "s/@VERSION@/$debversion/; s/@ARCH@/$arch/; s/@SIZE@/$size/; s|@MAINTAINER@|$maintainer|" "$here/control" >"$root/DEBIAN/control"
	find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
	dpkg-deb --root-owner-group -Zgzip -z6 --build "$root" "$dist/linerate_${debversion}_$arch.deb" >/dev/null
	echo "$dist/linerate_${debversion}_$arch.deb"
done
