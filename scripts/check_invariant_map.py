#!/usr/bin/env python3
"""Checks that every name `core/src/docs/invariants.rs` cites exists (run by scripts/test.sh).

Rustdoc cannot see the test names in the invariant map, so without this check the map drifts
(tests renamed, files turned into folders) while still reading as proof. Input: the output of
`cargo test --features fuzzing -- --list --format terse` (stdout and stderr together, so the
"Running <target>" lines name each binary) on stdin or in the file given as the first argument.

What the map's backticked names mean, column by column (the map's own header says the same):
- tests: `file::test` (a unit test in module `file`, the `tests` submodule skipped, or an
  integration test in `tests/file.rs`; more `::` segments qualify further), `…::test` (same
  `file` as the name before it), a trailing `*` (a prefix: at least one test starts with it),
  `file::*` (the file has at least one test), a bare `target` (an integration-test target), or
  `module::Item` naming a doctest on that item (e.g. a `compile_fail` doctest).
- loom models: `model::test` (a `#[test] fn test` in `loom_tests/model.rs`, which Cargo.toml
  declares as a `[[test]]` path), `model::*` or a bare `model`.
- fuzz: a bare `target` (fuzz/fuzz_targets/target.rs) or a `file::test` as in the tests column.
Backticked paths anywhere in the file (ending in .rs, .md, .py, .sh or /) must exist.
Backticked words without `::` in the tests column that are not targets (prose such as `Clone`)
are reported: write prose without backticks. Also checks the headline of core/src/docs/mod.rs:
no `SeqCst` in our own code (arc-swap's inside is not ours).
Exit status 1 lists every dangling name.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAP = ROOT / "core/src/docs/invariants.rs"


def read_list(text):
    """Test names from `cargo test -- --list --format terse`, qualified by their binary."""
    names = set()
    targets = set()
    binary = None
    for line in text.splitlines():
        line = line.strip()
        m = re.match(r"Running (unittests )?(\S+)", line)
        if m:
            path = m.group(2)
            if m.group(1):  # unittests src/lib.rs or src/main.rs: module paths say enough
                binary = ""
            else:
                binary = pathlib.Path(path).stem
                targets.add(binary)
            continue
        if line.startswith("Doc-tests"):
            binary = ""
            continue
        m = re.match(r"(.*): test$", line)
        if not m or binary is None:
            continue
        name = m.group(1)
        # Doctest: "src/x.rs - module::Item (line 12) - compile fail"
        d = re.match(r"\S+\.rs - (\S+) \(line \d+\)", name)
        if d:
            names.add("doctest::" + d.group(1))
            continue
        segs = [s for s in name.split("::") if s != "tests"]
        if binary:
            segs = [binary] + segs
        names.add("::".join(segs))
    return names, targets


def matches(ref, names):
    """`a::b` matches a name ending in segments a, b; a trailing `*` makes the last a prefix."""
    want = ref.split("::")
    glob = want[-1].endswith("*")
    for name in names:
        segs = name.split("::")
        if len(segs) < len(want):
            continue
        tail = segs[len(segs) - len(want):]
        if glob:
            head_ok = tail[:-1] == want[:-1]
            if head_ok and tail[-1].startswith(want[-1][:-1]):
                return True
            # `file::*`: every test under the file, at any depth
            if want[-1] == "*" and want[:-1] == segs[: len(want) - 1]:
                return True
        elif tail == want:
            return True
    return False


def loom_models():
    """`model` -> set of `#[test]` function names, for every loom_tests file Cargo.toml declares."""
    cargo = (ROOT / "Cargo.toml").read_text()
    declared = set(re.findall(r'path = "loom_tests/(\w+)\.rs"', cargo))
    models = {}
    for f in (ROOT / "loom_tests").glob("*.rs"):
        if f.stem not in declared:
            continue
        tests = re.findall(r"#\[test\]\s*(?:#\[[^\]]*\]\s*)*fn (\w+)", f.read_text())
        models[f.stem] = set(tests)
    return models


def expand(spans):
    """Resolves `…::x` against the previous span's first segment."""
    out = []
    prev = None
    for s in spans:
        if s.startswith("…::") and prev:
            s = prev.split("::")[0] + s[1:]
        out.append(s)
        prev = s
    return out


def main():
    text = open(sys.argv[1]).read() if len(sys.argv) > 1 and sys.argv[1] != "-" else sys.stdin.read()
    names, targets = read_list(text)
    if not names:
        print("check_invariant_map: no test names in the --list output", file=sys.stderr)
        return 1
    models = loom_models()
    fuzz_targets = {f.stem for f in (ROOT / "fuzz/fuzz_targets").glob("*.rs")}
    doc = MAP.read_text()
    errors = []

    for span in re.findall(r"`([^`]+)`", doc):
        if span.endswith((".rs", ".md", ".py", ".sh", "/")) and "*" not in span and "<" not in span:
            if not (ROOT / span).exists():
                errors.append(f"path `{span}` does not exist")

    # docs/mod.rs leads with "none of our own operations use SeqCst": keep it true.
    for f in sorted(f for d in ("core/src", "master/src", "src") for f in (ROOT / d).rglob("*.rs")):
        if "docs" in f.parts:
            continue
        for n, line in enumerate(f.read_text().splitlines(), 1):
            if "SeqCst" in line.split("//")[0]:
                errors.append(f"{f.relative_to(ROOT)}:{n} uses SeqCst, but core/src/docs/mod.rs says none of ours does")

    rows = [l for l in doc.splitlines() if re.match(r"//! \| \d+ \|", l)]
    if len(rows) < 21:
        errors.append(f"expected the 21 invariant rows, found {len(rows)}")
    for row in rows:
        cells = [c.strip() for c in row[len("//! |"):].split("|")]
        number, tests, loom, fuzz = cells[0], cells[2], cells[3], cells[4]

        def check_test(ref):
            if "::" in ref:
                if not matches(ref, names):
                    errors.append(f"invariant {number}: test `{ref}` is not in `cargo test -- --list`")
            elif ref not in targets:
                errors.append(f"invariant {number}: `{ref}` is neither `file::test` nor a test target")

        for ref in expand(re.findall(r"`([^`]+)`", tests)):
            if ref.endswith(".md"):
                continue  # a document, checked as a path above
            check_test(ref)
        for ref in expand(re.findall(r"`([^`]+)`", loom)):
            model, _, test = ref.partition("::")
            if model not in models:
                errors.append(f"invariant {number}: loom model file `{model}` is not a [[test]] in loom_tests/")
            elif test and test != "*" and test not in models[model]:
                errors.append(f"invariant {number}: loom model `{ref}` has no #[test] fn {test}")
        for ref in expand(re.findall(r"`([^`]+)`", fuzz)):
            if "::" in ref:
                check_test(ref)
            elif ref not in fuzz_targets:
                errors.append(f"invariant {number}: fuzz target `{ref}` is not in fuzz/fuzz_targets/")

    for e in errors:
        print(f"check_invariant_map: {e}", file=sys.stderr)
    if errors:
        return 1
    print(f"invariant map: {len(rows)} rows, every cited test, loom model, fuzz target and path exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
