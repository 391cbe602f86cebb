#!/bin/sh
# build-rootfs.sh DIR - the root filesystem of the default image "runtime":
# Debian 12 minbase with python3, pip, venv, ca-certificates, curl, git,
# iproute2 and nftables (so that tests can show root in the guest changes
# nothing on the host), less and procps (a shell in a sandbox has a pager,
# ps and top), sudo (passwordless for the sandbox user, as Runtime
# Cloud's base image: root in the guest is assumed hostile anyway,
# docs/security.md),
# user runtime (1000:1000, home /workspace), without docs, man pages,
# locales, apt lists and logs.
#
# Run as root by libruntime, which tars DIR into the image's first layer and
# caches it under the hash of this file: any change here rebuilds the image.
# The Debian mirror comes from the host's apt configuration (or
# RUNTIME_DEBIAN_MIRROR); no host name is ever written here.
set -eu

PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
LC_ALL=C
export LC_ALL

suite=bookworm
packages=python3,python3-pip,python3-venv,ca-certificates,curl,git,iproute2,nftables,less,procps,sudo

say () { echo "runtime: $*" >&2; }
die () { say "error: $*"; exit 1; }

[ $# -eq 1 ] || die "usage: build-rootfs.sh DIR"
if [ -e "$1" ] && [ -n "$(ls -A "$1")" ]; then
  die "'$1' exists and is not empty"
fi
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap needs it)"
command -v debootstrap >/dev/null || die "debootstrap not found: apt-get install debootstrap"
# Named explicitly: without it debootstrap would warn and go on unverified.
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$keyring" ] || die "$keyring missing: apt-get install debian-archive-keyring"

# The first Debian source serving $suite main: deb822 stanzas in
# debian.sources, then one-line entries in sources.list.
find_mirror () {
  if [ -n "${RUNTIME_DEBIAN_MIRROR:-}" ]; then
    echo "$RUNTIME_DEBIAN_MIRROR"
    return
  fi
  if [ -r /etc/apt/sources.list.d/debian.sources ]; then
    awk -v suite="$suite" '
      BEGIN { RS = ""; FS = "\n" }
      {
        types = ""; uris = ""; suites = ""; comps = ""; enabled = "yes"
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^[ \t]*#/) continue
          k = $i; sub(/:.*/, "", k); k = tolower(k)
          v = $i; sub(/^[^:]*:[ \t]*/, "", v); gsub(/\t/, " ", v)
          if (k == "types") types = v
          else if (k == "uris") uris = v
          else if (k == "suites") suites = v
          else if (k == "components") comps = v
          else if (k == "enabled") enabled = tolower(v)
        }
        if (enabled == "no" || (" " types " ") !~ / deb / || (" " suites " ") !~ (" " suite " ")) next
        if ((" " comps " ") !~ / main /) next
        split(uris, u, / +/)
        if (u[1] != "") { print u[1]; exit }
      }' /etc/apt/sources.list.d/debian.sources | grep . && return
  fi
  if [ -r /etc/apt/sources.list ]; then
    awk -v suite="$suite" '
      $1 == "deb" {
        i = 2
        if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
        if ($(i + 1) != suite) next
        for (j = i + 2; j <= NF; j++) if ($j == "main") { print $i; exit }
      }' /etc/apt/sources.list | grep . && return
  fi
  return 1
}

mirror=$(find_mirror) || die "no Debian $suite mirror in /etc/apt (set RUNTIME_DEBIAN_MIRROR)"

mkdir -p "$1"
dir=$(cd "$1" && pwd -P)
log=$(mktemp)
status=$(mktemp)

# debootstrap mounts /proc and /sys in the tree; never leave them behind,
# whatever happens (the caller removes the tree).
cleanup () {
  rc=$?
  awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -f "$log" "$status"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

say "debootstrap $suite from $mirror"
{
  rc=0
  debootstrap --variant=minbase --include="$packages" --keyring="$keyring" "$suite" "$dir" "$mirror" >"$log" 2>&1 &
  wait $! || rc=$?
  echo "$rc" >"$status"
} &
bg=$!
# A few milestones out of debootstrap's several hundred lines.
last=
while kill -0 "$bg" 2>/dev/null; do
  sleep 1
  line=$(grep -E '^I: (Retrieving InRelease|Checking component|Installing core|Unpacking the base|Configuring the base|Base system installed)' "$log" | tail -n 1) || true
  if [ -n "$line" ] && [ "$line" != "$last" ]; then
    case $line in
      "I: Retrieving InRelease"*) say "debootstrap: reading the package index" ;;
      "I: Checking component"*) say "debootstrap: downloading packages" ;;
      "I: Installing core"*) say "debootstrap: installing the required packages" ;;
      "I: Unpacking the base"*) say "debootstrap: unpacking the other packages" ;;
      "I: Configuring the base"*) say "debootstrap: configuring the packages" ;;
      "I: Base system installed"*) say "debootstrap: done" ;;
    esac
    last=$line
  fi
done
wait "$bg" || true
if [ "$(cat "$status")" != 0 ]; then
  tail -n 20 "$log" >&2
  die "debootstrap failed"
fi

say "adding user runtime (1000:1000, home /workspace)"
chroot "$dir" groupadd -g 1000 runtime
chroot "$dir" useradd -m -d /workspace -u 1000 -g 1000 -s /bin/bash runtime
chown 1000:1000 "$dir/workspace"
chmod 0755 "$dir/workspace"
say "giving user runtime passwordless sudo"
printf 'runtime ALL=(ALL:ALL) NOPASSWD: ALL\n' >"$dir/etc/sudoers.d/runtime"
chmod 0440 "$dir/etc/sudoers.d/runtime"
chroot "$dir" visudo -c -q -f /etc/sudoers.d/runtime || die "the sudoers rule does not parse"

echo runtime >"$dir/etc/hostname"
printf '127.0.0.1\tlocalhost runtime\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$dir/etc/hosts"
# debootstrap copied the host's resolver; the sandbox's comes from the
# runtime, never from the host.
: >"$dir/etc/resolv.conf"
[ -s "$dir/etc/ssl/certs/ca-certificates.crt" ] || die "the CA bundle is missing"

say "dropping docs, man pages, locales, apt lists and logs"
# Keep copyright files (small, and the licences ask for them).
find "$dir/usr/share/doc" ! -type d ! -name copyright -delete
find "$dir/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$dir"/usr/share/man/* "$dir"/usr/share/info/* "$dir"/usr/share/locale/* \
  "$dir"/usr/share/doc-base/* "$dir"/usr/share/lintian/*
find "$dir/usr/lib/locale" -mindepth 1 -maxdepth 1 ! -name 'C.*' -exec rm -rf {} +
find "$dir/var/lib/apt/lists" "$dir/var/cache/apt" "$dir/var/log" -type f -delete
rm -f "$dir"/var/cache/debconf/*-old "$dir"/var/lib/dpkg/*-old
rm -rf "$dir"/tmp/* "$dir"/var/tmp/*
# Packages added later by image builds stay slim the same way.
cat >"$dir/etc/dpkg/dpkg.cfg.d/01-runtime-nodoc" <<'EOF'
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
path-exclude=/usr/share/lintian/*
EOF
# Python's __pycache__ stays: user 1000 cannot write under /usr/lib, so
# without it every python3 start recompiles the stdlib (0.45 s against
# 0.14 s on the host for json+subprocess+urllib, 12-22x that under TCG).

say "root filesystem ready: $(du -sm "$dir" | cut -f1) MiB"
