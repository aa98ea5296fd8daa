#!/usr/bin/env bash
# Test the rendered book the way a reader meets it: render it (scripts/render.sh), serve it
# on 127.0.0.1 (scripts/serve.sh, into target/site-test/served, so target/book stays the
# static render), open the chapters in headless Chromium at 1280 and 390 px and check that
# math is typeset in the bundled math font, Rust is highlighted, Output and saved blocks are
# styled, no code is cut, sections and neighbours are linked, callouts differ, the figures
# and the chapter graph are drawn, every internal link resolves, search works, and nothing
# is requested off this host.
#
#   scripts/test-site.sh
#
# Screenshots go to target/site-test/ (ch02.png: section 2.5; ch02-top.png; ch00-graph.png;
# NN-slug-1280.png and NN-slug-390.png: the top of every chapter at both widths).
# Installs, when missing: Debian's chromium (apt-get, needs root) and the npm packages of
# scripts/site-test/ (npm ci, from its package-lock.json).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/target/site-test
mkdir -p "$out"

if [[ -n "${CHROMIUM:-}" && ! -x "$CHROMIUM" ]]; then
  echo "test-site: CHROMIUM=$CHROMIUM is not an executable; point it at a Chromium, or unset it" >&2
  exit 2
fi
start=$SECONDS
"$root/scripts/render.sh"
echo "test-site: rendered in $((SECONDS - start)) s"

chromium=${CHROMIUM:-/usr/bin/chromium}
if [[ ! -x "$chromium" ]]; then
  echo "test-site: installing Debian's chromium" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
  [[ -x "$chromium" ]] || { echo "test-site: no $chromium after installing chromium" >&2; exit 1; }
fi
site_test=$root/scripts/site-test
if [[ ! -f "$site_test/node_modules/.package-lock.json" ||
      "$site_test/package-lock.json" -nt "$site_test/node_modules/.package-lock.json" ]]; then
  (cd "$site_test" && npm ci --no-audit --no-fund --loglevel=error)
fi

port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
AGENTRL_SERVE_DIR=$out/served "$root/scripts/serve.sh" "$port" >"$out/serve.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
served=0
for _ in $(seq 120); do
  if curl -fs -o /dev/null "http://127.0.0.1:$port/02-rl-fundamentals.html"; then served=1; break; fi
  if ! kill -0 "$server" 2>/dev/null; then
    echo "test-site: scripts/serve.sh exited:" >&2
    cat "$out/serve.log" >&2
    exit 1
  fi
  sleep 0.5
done
if [[ $served = 0 ]]; then
  echo "test-site: scripts/serve.sh did not answer on port $port within 60 s:" >&2
  cat "$out/serve.log" >&2
  exit 1
fi

CHROMIUM=$chromium node "$site_test/test.mjs" "http://127.0.0.1:$port/" "$root/target/book" "$out"
echo "test-site: passed in $((SECONDS - start)) s"
