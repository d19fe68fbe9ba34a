#!/usr/bin/env python3
"""Fails when a source file of a crate's src/ is over 600 lines (run by scripts/test.sh).

The house keeps files to a few hundred lines, one concept each; 600 is the bound a file may
not cross. The whole file counts, code, docs and inline tests alike: a module whose unit tests
would take it over the bound keeps them in a file of their own beside it (`mod tests;` ->
`tests.rs`, or a `*_tests.rs` sibling), and only such test files are exempt.
No dependencies: python3 only.
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CRATES = ["core/src", "master/src", "src", "wire/src", "ffi/src"]
BOUND = 600


def is_test_file(path):
    return path.name == "tests.rs" or path.name.endswith("_tests.rs")


def main():
    over = []
    counted = 0
    for crate in CRATES:
        for path in sorted((ROOT / crate).rglob("*.rs")):
            if is_test_file(path):
                continue
            counted += 1
            n = len(path.read_text(encoding="utf-8").splitlines())
            if n > BOUND:
                over.append((n, path.relative_to(ROOT)))
    for n, path in over:
        print(f"check_sizes: {path}: {n} lines (bound {BOUND})")
    if over:
        return 1
    print(f"check_sizes: {counted} source files in {', '.join(CRATES)}, none over {BOUND} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
