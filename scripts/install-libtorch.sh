#!/usr/bin/env bash
# Install libtorch (the C++ library tch links against) from the PyPI wheel.
#
#   scripts/install-libtorch.sh DEST [VERSION]
#
# DEST receives the wheel's contents (torch plus its CUDA runtime libraries, which
# libtorch_cpu.so links against even on CPU); libtorch itself is DEST/torch, the
# directory to use as LIBTORCH. The checker runs this script by itself when libtorch is
# missing; you never need to call it by hand.
set -euo pipefail
dest=${1:?usage: install-libtorch.sh DEST [VERSION]}
version=${2:-2.13.0}
python=${PYTHON:-python3}
if ! command -v "$python" >/dev/null; then
  echo "error: $python not found; it is needed to fetch the torch==$version wheel with pip" >&2
  exit 3
fi
partial="$dest.partial"
rm -rf "$partial"
mkdir -p "$(dirname "$dest")"
echo "pip install --target $partial torch==$version"
"$python" -m pip install --no-compile --disable-pip-version-check --no-input \
  --retries 1 --timeout 30 --target "$partial" "torch==$version"
test -f "$partial/torch/lib/libtorch_cpu.so" || { echo "error: the wheel has no torch/lib/libtorch_cpu.so" >&2; exit 4; }
rm -rf "$dest"
mv "$partial" "$dest"
echo "libtorch $version: $dest/torch"
