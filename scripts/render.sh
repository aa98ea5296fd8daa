#!/usr/bin/env bash
# Render the book to static HTML in target/book/ (open target/book/index.html).
#
#   scripts/render.sh
#
# Offline: math is MathML typeset at build time, fonts, search and the mermaid script are
# bundled. The first run installs mdbook and mermaid (scripts/setup-render.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mdbook=$("$root/scripts/setup-render.sh")
"$mdbook" build "$root/book"
echo "rendered: $root/target/book/index.html"
