#!/usr/bin/env bash
# Serve the book on http://127.0.0.1:3000 while you edit it: mdbook rebuilds and the page
# reloads whenever a chapter, book.toml or the theme changes.
#
#   scripts/serve.sh [PORT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
port=${1:-3000}
mdbook=$("$root/scripts/setup-render.sh")
echo "serving the book at http://127.0.0.1:$port/ (Ctrl-C stops)"
exec "$mdbook" serve "$root/book" --hostname 127.0.0.1 --port "$port"
