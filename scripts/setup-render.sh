#!/usr/bin/env bash
# Set up what rendering the book needs, once, idempotently; prints the mdbook to run.
#
#   scripts/setup-render.sh
#
# - mdbook (pinned) into target/tools/, with `cargo install --locked` from crates.io;
# - mermaid.min.js (pinned, checksummed) from the npm registry into book/theme/, so the
#   chapter graph is drawn without any network access when the book is read;
# - STIX Two Math (pinned, checksummed; SIL Open Font License) from the npm registry into
#   book/src/fonts/, the OpenType math font the book's MathML is set in (mdBook copies it);
# - the preprocessor (render/, `mdbook-agentrl`), which book/book.toml runs via cargo;
# - the API documentation of agentrl (rustdoc, `cargo doc` with tch's `doc-only` feature, so
#   without libtorch) into book/src/api/, which mdBook copies into the site as api/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

MDBOOK_VERSION=0.4.52 # the preprocessor speaks mdBook 0.4's JSON (render/src/preprocess.rs)
MERMAID_VERSION=11.17.2
MERMAID_SHA256=581ed7d74bd9048d0e3a91363927d72ef22942d7722546b27f7cc29e35390eb8
# @fontsource's "latin" file holds the whole font (4,605 glyphs and the MATH table, checked
# with fontTools); agentrl.css declares it without the package's unicode-range.
STIX_VERSION=5.3.0
STIX_SHA256=8b2a6834cfe1f4e0f3724ffa59fe92000013fc5a4c41e6a3f438006c26c60f0d

tools=$root/target/tools
mdbook=$tools/bin/mdbook
if [[ "$("$mdbook" --version 2>/dev/null)" != "mdbook v$MDBOOK_VERSION" ]]; then
  echo "setup-render: installing mdbook $MDBOOK_VERSION into $tools (once; a few minutes)" >&2
  cargo install mdbook --version "$MDBOOK_VERSION" --locked --root "$tools" --quiet >&2
fi

js=$root/book/theme/mermaid.min.js
if ! echo "$MERMAID_SHA256  $js" | sha256sum --check --status 2>/dev/null; then
  echo "setup-render: fetching mermaid $MERMAID_VERSION from the npm registry into book/theme/" >&2
  if ! command -v npm >/dev/null; then
    echo "setup-render: error: npm not found; rendering the book needs Node.js with npm (docs/rendering.md)" >&2
    exit 1
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  npm pack "mermaid@$MERMAID_VERSION" --pack-destination "$tmp" --silent >/dev/null
  tar -xzf "$tmp/mermaid-$MERMAID_VERSION.tgz" -C "$tmp" package/dist/mermaid.min.js
  if ! echo "$MERMAID_SHA256  $tmp/package/dist/mermaid.min.js" | sha256sum --check --status; then
    echo "setup-render: error: mermaid.min.js from mermaid@$MERMAID_VERSION has an unexpected checksum" >&2
    exit 1
  fi
  mv "$tmp/package/dist/mermaid.min.js" "$js"
fi

font=$root/book/src/fonts/stix-two-math.woff2
if ! echo "$STIX_SHA256  $font" | sha256sum --check --status 2>/dev/null; then
  echo "setup-render: fetching STIX Two Math $STIX_VERSION from the npm registry into book/src/fonts/" >&2
  if ! command -v npm >/dev/null; then
    echo "setup-render: error: npm not found; rendering the book needs Node.js with npm (docs/rendering.md)" >&2
    exit 1
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  npm pack "@fontsource/stix-two-math@$STIX_VERSION" --pack-destination "$tmp" --silent >/dev/null
  tar -xzf "$tmp/fontsource-stix-two-math-$STIX_VERSION.tgz" -C "$tmp" \
    package/files/stix-two-math-latin-400-normal.woff2 package/LICENSE
  if ! echo "$STIX_SHA256  $tmp/package/files/stix-two-math-latin-400-normal.woff2" | sha256sum --check --status; then
    echo "setup-render: error: STIX Two Math from @fontsource/stix-two-math@$STIX_VERSION has an unexpected checksum" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$font")"
  mv "$tmp/package/LICENSE" "$(dirname "$font")/STIX-Two-Math-OFL.txt"
  mv "$tmp/package/files/stix-two-math-latin-400-normal.woff2" "$font"
fi

# book.toml runs the preprocessor with `cargo run`; building it here shows compile
# errors up front and makes that a no-op.
(cd "$root" && cargo build --quiet -p render --bin mdbook-agentrl >&2)

# rustdoc of the generated crate, linked from the library page (a row's "API"). libtorch is
# not needed: tch's doc-only feature skips linking it (the first build compiles the
# crate's dependencies, a few minutes). Rebuilt when agentrl/ changed, then copied whole.
api=$root/book/src/api
(cd "$root" && env -u LIBTORCH cargo doc --quiet --no-deps --manifest-path agentrl/Cargo.toml \
  --features tch/doc-only --target-dir target/api-doc >&2)
if ! diff -rq "$root/target/api-doc/doc" "$api" >/dev/null 2>&1; then
  rm -rf "$api"
  cp -r "$root/target/api-doc/doc" "$api"
fi
echo "$mdbook"
