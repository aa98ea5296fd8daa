#!/usr/bin/env python3
"""Format the Rust blocks of book chapters with rustfmt at the book's width (100 columns).

    scripts/fmt-blocks.py book/src/03-language-models-as-policies.md [...]

Saved blocks are formatted as files of items; run blocks inside a wrapper function, which
is removed again. A block rustfmt cannot parse is left as it is and reported. Comments that
are too long stay too long: rustfmt does not rewrap them (book-lint reports them).
"""
import re
import subprocess
import sys

CONFIG = "max_width=100,use_small_heuristics=Max,edition=2021"


def rustfmt(code):
    r = subprocess.run(["rustfmt", "--config", CONFIG, "--emit", "stdout", "-q"],
                       input=code, capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def format_block(lines):
    saved = bool(lines) and lines[0].strip() == "//@save"
    body = "\n".join(lines[1:] if saved else lines) + "\n"
    if saved:
        out = rustfmt(body)
        return None if out is None else ["//@save"] + out.rstrip("\n").split("\n")
    out = rustfmt("fn __block() {\n" + body + "}\n")
    if out is None:
        return None
    inner = out.rstrip("\n").split("\n")
    assert inner[0] == "fn __block() {" and inner[-1] == "}", inner[:1]
    return [l[4:] if l.startswith("    ") else l for l in inner[1:-1]]


def main(paths):
    for path in paths:
        text = open(path).read().split("\n")
        out, i, failed = [], 0, []
        while i < len(text):
            line = text[i]
            m = re.match(r"^```rust(,should_panic)?\s*$", line)
            if not m:
                out.append(line)
                i += 1
                continue
            j = i + 1
            while not text[j].startswith("```"):
                j += 1
            block = text[i + 1:j]
            new = format_block(block)
            if new is None:
                failed.append(i + 1)
                new = block
            out += [line] + new + [text[j]]
            i = j + 1
        open(path, "w").write("\n".join(out))
        for line in failed:
            print(f"{path}:{line}: rustfmt could not parse this block; left as it is")


if __name__ == "__main__":
    main(sys.argv[1:])
