#!/usr/bin/env bash
# Colab's runtime, frozen: tools/colab_runtime.txt (the versions, one file a maintainer updates when Colab moves)
# built from the package registries only -- Debian 13's python3.13 in a chroot made by debootstrap from Debian's
# archive, a venv with Colab's packages from PyPI -- and the book's chapters run in it as a Colab student runs them
# (tools/colab_check.py). Needs root (a chroot), debootstrap and the two registries; where one is missing it says
# so and stops with status 0 ("skipped: ..."), so that `make test` goes on. The runtime is built once (~5 min,
# ~6 GB) and rebuilt when colab_runtime.txt changes.
#   tools/colab_freeze.sh          (make colab-freeze)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
R=${COLAB_ROOT:-/var/tmp/idmap-colab-freeze}
SPEC=$REPO/tools/colab_runtime.txt
DATA=${IDMAP_DATA:-$REPO/../shared/data}
skip() { echo "colab-freeze skipped: $*"; exit 0; }

[ "$(id -u)" = 0 ] || skip "it needs root (a chroot); run it as root, or on a machine you may change"
command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null 2>&1 || \
  skip "debootstrap is not installed and apt-get cannot install it"
[ -d "$DATA" ] || skip "no datasets at $DATA (IDMAP_DATA)"
PYVER=$(sed -n 's/^# python \([0-9.]*\).*/\1/p' "$SPEC")
if [ ! -x "$R/usr/bin/python$PYVER" ]; then
  echo "colab-freeze: building Debian 13 with python$PYVER in $R (debootstrap)"
  rm -rf "$R"
  debootstrap --variant=minbase --include="python$PYVER,python3-venv,ca-certificates,git" trixie "$R" \
    http://deb.debian.org/debian > "$R.debootstrap.log" 2>&1 || skip "debootstrap failed (see $R.debootstrap.log)"
fi
cp /etc/resolv.conf "$R/etc/resolv.conf"
cp /etc/ssl/certs/ca-certificates.crt "$R/etc/ssl/certs/ca-certificates.crt"  # a registry proxy's CA, if any
stamp=$(sha256sum "$SPEC" | cut -c1-16)
if [ "$(cat "$R/venv/.stamp" 2>/dev/null)" != "$stamp" ]; then
  echo "colab-freeze: installing $SPEC into $R/venv"
  rm -rf "$R/venv"
  cp "$SPEC" "$R/tmp/colab_runtime.txt"
  chroot "$R" env -i PATH=/usr/bin:/bin HOME=/root PIP_DISABLE_PIP_VERSION_CHECK=1 bash -c \
    "python$PYVER -m venv /venv && /venv/bin/pip install -q -r /tmp/colab_runtime.txt" || \
    skip "the runtime's packages could not be installed from the registry"
  echo "$stamp" > "$R/venv/.stamp"
fi
# the book as the setup cell's clone leaves it (tracked and new files of this checkout), the datasets read-only
rm -rf "$R/work" "$R/src" && mkdir -p "$R/work" "$R/src" "$R/data"
(cd "$REPO" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$R/src"
mountpoint -q "$R/data" || mount --bind -o ro "$DATA" "$R/data"
mountpoint -q "$R/proc" || mount -t proc proc "$R/proc"
trap 'umount "$R/data" "$R/proc" 2>/dev/null || true' EXIT
chroot "$R" env -i PATH=/venv/bin:/usr/bin:/bin HOME=/root IDMAP_DATA=/data OMP_NUM_THREADS=1 \
  PIP_DISABLE_PIP_VERSION_CHECK=1 PYDEVD_DISABLE_FILE_VALIDATION=1 /venv/bin/python \
  /src/tools/colab_check.py /src /work
