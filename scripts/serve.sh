#!/usr/bin/env bash
# Serve the book on http://127.0.0.1:3000 while you edit it: mdbook rebuilds and the page
# reloads whenever a chapter, book.toml or the theme changes.
#
#   scripts/serve.sh [PORT]
set -euo pipefail
case "${1:-}" in
  -h | --help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
port=${1:-3000}
if [[ ! "$port" =~ ^[0-9]+$ ]] || ((port < 1 || port > 65535)) || (($# > 1)); then
  echo "serve: usage: scripts/serve.sh [PORT] (a port number, 1-65535); got: $*" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
# mdBook starts the preprocessor (`cargo run -p render`, book/book.toml) in the folder it was
# started from: run from the repository root, so it is found from anywhere.
cd "$root"
mdbook=$("$root/scripts/setup-render.sh")
echo "serving the book at http://127.0.0.1:$port/ (Ctrl-C stops)"
# AGENTRL_SERVE_DIR: build there instead of target/book (the site test serves its own copy,
# so the live-reload build never replaces the static one scripts/render.sh wrote).
exec "$mdbook" serve "$root/book" --hostname 127.0.0.1 --port "$port" ${AGENTRL_SERVE_DIR:+--dest-dir "$AGENTRL_SERVE_DIR"}
