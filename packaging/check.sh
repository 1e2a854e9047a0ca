#!/bin/sh
# check.sh DIST: check the .deb packages deb.sh built in DIST (make test
# runs it after make release): dpkg-deb reads each (--info, --contents)
# and finds every file a package must hold; lintian finds no error (its
# warnings are printed); systemd-analyze verify finds nothing to say about
# the agent's unit as packaged.
set -eu
dist=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

debs=$(ls "$dist"/linerate_*.deb)
for arch in amd64 arm64 armhf; do
	ls "$dist"/linerate_*_"$arch".deb >/dev/null || { echo "check.sh: no $arch package in $dist" >&2; fail=1; }
done
for deb in $debs; do
	info=$(dpkg-deb --info "$deb")
	contents=$(dpkg-deb --contents "$deb")
	for f in ./usr/bin/linerate ./usr/share/man/man1/linerate.1.gz ./usr/share/man/man1/linerate-serve.1.gz \
		./usr/share/bash-completion/completions/linerate ./usr/share/zsh/vendor-completions/_linerate \
		./usr/share/fish/vendor_completions.d/linerate.fish ./lib/systemd/system/linerate-serve.service \
		./etc/default/linerate ./usr/share/doc/linerate/copyright; do
		printf '%s\n' "$contents" | grep -q " $f\$" || { echo "check.sh: $deb lacks $f" >&2; fail=1; }
	done
	printf '%s\n' "$contents" | grep -q '^-rw------- root/root .* ./etc/default/linerate$' ||
		{ echo "check.sh: $deb: /etc/default/linerate is not root's, mode 600" >&2; fail=1; }
	printf '%s\n' "$info" | grep -q "^ Architecture: $(echo "$deb" | sed 's/.*_\(.*\)\.deb/\1/')\$" ||
		{ echo "check.sh: $deb: Architecture does not match its name" >&2; fail=1; }
	# One man page per command, at least: the commands a user types most.
	for c in bench-udp run serve watch tune-apply; do
		printf '%s\n' "$contents" | grep -q "linerate-$c.1.gz\$" || { echo "check.sh: $deb: no man page for $c" >&2; fail=1; }
	done
done

# lintian: errors fail, warnings are listed. (Its overrides are in the
# package: usr/share/lintian/overrides/linerate.)
out=$(lintian --no-cfg --tag-display-limit 0 $debs 2>&1) || true
printf '%s\n' "$out" | grep '^W:' | sort -u || true
if printf '%s\n' "$out" | grep '^E:'; then
	echo "check.sh: lintian found errors" >&2
	fail=1
fi

# The unit as packaged, with its ExecStart pointed at the packaged binary
# (systemd-analyze checks that the command is executable) and man pointed
# at the packaged pages (it checks Documentation=man:...). Any output is a
# finding: an unknown key is only a warning to systemd.
deb=$(ls "$dist"/linerate_*_amd64.deb)
dpkg-deb -x "$deb" "$work/root"
sed "s#/usr/bin/linerate#$work/root/usr/bin/linerate#" "$work/root/lib/systemd/system/linerate-serve.service" >"$work/linerate-serve.service"
if ! out=$(MANPATH="$work/root/usr/share/man" systemd-analyze verify "$work/linerate-serve.service" 2>&1) || [ -n "$out" ]; then
	printf 'check.sh: systemd-analyze verify linerate-serve.service:\n%s\n' "$out" >&2
	fail=1
fi
[ $fail = 0 ] && echo "check.sh: $(echo $debs | wc -w) packages: dpkg-deb, lintian and systemd-analyze verify are clean"
exit $fail
