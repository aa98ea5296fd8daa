#!/usr/bin/env bash
# Render the book to static HTML in target/book/ (open target/book/index.html).
#
#   scripts/render.sh
#
# Offline: math is MathML typeset at build time, fonts, search and the mermaid script are
# bundled. The first run installs mdbook and mermaid (scripts/setup-render.sh).
set -euo pipefail
case "${1:-}" in
  -h | --help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "render: takes no arguments (got: $*); see --help" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
# mdBook starts the preprocessor (`cargo run -p render`, book/book.toml) in the folder it was
# started from, and skips a preprocessor that fails without failing the build: run from the
# repository root, and check below that the preprocessor ran.
cd "$root"
mdbook=$("$root/scripts/setup-render.sh")
"$mdbook" build "$root/book"
# Without the preprocessor a saved block renders with its marker as the code's first line.
if grep -lE '^(</span>)?//@save' "$root"/target/book/*.html >/dev/null 2>&1; then
  echo "render: error: target/book shows saved blocks with their //@save line: the preprocessor (render/) did not run" >&2
  exit 1
fi
echo "rendered: $root/target/book/index.html"
