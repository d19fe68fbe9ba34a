#!/usr/bin/env python3
"""Fails when the files of a crate's src/ import each other in a circle (run by scripts/test.sh),
for each crate of the workspace that has a library: `core/src`, `master/src` and the root `src`.

The crate is layered (sync -> clock/config -> liveness -> eligibility/telemetry -> offboarding
-> monitor/snapshot -> master -> sim); a circle between two files means neither can be read,
tested or moved without the other. This script draws the file-level graph and lists every
circle with the lines that make each arrow. No dependencies: python3 only; a second or two.

What counts as an arrow from file A to file B:
- a `use crate::...`, `use super::...` or `use self::...` in A (use trees with braces, `as`
  and globs included), and any `crate::`/`super::`/`self::` path written in A's code (a call
  such as `crate::telemetry::job_completed(..)`, a type such as `crate::master::Master`),
  wherever it resolves to an item defined in B. Comments, doc comments, strings and
  visibility restrictions (`pub(in crate::master)`, `pub(super)`) are not arrows.
- A path is resolved through the module tree (`mod.rs`, `name.rs` + `name/`, `#[path]`) and
  through re-exports (`pub use` and plain `use` items of a module, which Rust lets its
  children name): `crate::master::OffboardingDriver` is an arrow to
  `master/src/master/offboard/mod.rs`, where the enum is defined, not to `master/src/master/mod.rs`, which
  re-exports it. An item no module or re-export names is taken to be defined in the module's
  own file. Items of inline `mod x { .. }` blocks belong to their file.

What does not count: an arrow from a module to its own descendants (e.g. `master/src/master/mod.rs`
naming `offboard::Offboarding`, or declaring and re-exporting its children). Rust's privacy
makes a parent and its children one unit: the children see the parent's private fields (the
master's `impl MasterCore` blocks live in the path files, over the rooms `mod.rs` declares), and
a parent is the only place its children can be made public. So a child may use its ancestors
and the ancestors may use the child, but two files neither of which contains the other must
not reach each other, directly or through others (siblings, cousins, or a child reaching a
sibling that reaches back into the child).

`src/main.rs` is the binary's own crate (it reaches the library by name) and is skipped.
Exit status 1 lists every circle (one per strongly connected component, shortest found).
"""
import collections
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
# Every crate checked, each on its own (a crate reaches another only by name, never by path).
CRATES = [ROOT / "core/src", ROOT / "master/src", ROOT / "src"]


def strip(text):
    """The code of `text` with comments, strings and char literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    out.append("\n" if text[i] == "\n" else "")
                    i += 1
        elif c in "br" and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")) and re.match(r'b?r(#*)"', text[i : i + 40]):
            m = re.match(r'b?r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + m.end())
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:])
            if m:
                out.append("' '")
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


VIS = re.compile(r"pub\s*\(\s*(?:in\s+[\w:]+|crate|super|self)\s*\)")


class Module:
    def __init__(self, path, file):
        self.path = path  # tuple of names, () for the crate
        self.file = file
        self.children = {}  # name -> Module
        self.uses = {}  # name -> absolute path tuple (re-exports and imports)
        self.globs = []  # absolute module paths glob-imported
        self.code = ""


def module_files():
    """Module path -> file, following mod declarations from src/lib.rs."""
    mods = {}

    def visit(path, file, dir_for_children):
        m = Module(path, file)
        mods[path] = m
        m.code = VIS.sub("", strip(file.read_text()))
        for decl in re.finditer(r"(#\[path\s*=\s*\"([^\"]+)\"\]\s*)?(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", file.read_text()):
            name = decl.group(3)
            if decl.group(2):
                child = file.parent / decl.group(2)
                child_dir = child.parent / child.stem
            elif (dir_for_children / f"{name}.rs").exists():
                child = dir_for_children / f"{name}.rs"
                child_dir = dir_for_children / name
            else:
                child = dir_for_children / name / "mod.rs"
                child_dir = dir_for_children / name
            if child.exists():
                visit(path + (name,), child, child_dir)
        return m

    visit((), SRC / "lib.rs", SRC)
    for path, m in mods.items():
        if path:
            mods[path[:-1]].children[path[-1]] = m
    return mods


def inline_scopes(code):
    """For each offset, the inline-module path it sits in: a list of (start, end, names)."""
    scopes = []
    for m in re.finditer(r"\bmod\s+(\w+)\s*\{", code):
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        scopes.append((m.start(), j, m.group(1)))
    return scopes


def inline_path(scopes, pos):
    return tuple(name for (s, e, name) in scopes if s <= pos < e)


def split_top(s):
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def expand_tree(tree):
    """`a::{b, c::{d, *}}` (whitespace removed) -> [['a','b'], ['a','c','d'], ['a','c','*']]."""
    if "{" in tree and tree.endswith("}"):
        head, _, body = tree.partition("{")
        prefix = [p for p in head.split("::") if p]
        return [prefix + segs for part in split_top(body[:-1]) for segs in expand_tree(part)]
    return [[p for p in tree.split("::") if p]]


def parse_uses(code):
    """Every use declaration: (offset, tree text) with whitespace kept for `as` detection."""
    for m in re.finditer(r"\buse\s+([^;]+);", code):
        yield m.start(), m.group(1)


def expand_use(text):
    """Every path a use tree names, with the name it binds (`x as y` binds `y`)."""
    text = re.sub(r"\s+as\s+", "@", text)  # mark ` as ` before whitespace is dropped
    text = re.sub(r"\s+", "", text)
    out = []
    for segs in expand_tree(text):
        alias = None
        if segs and "@" in segs[-1]:
            name, alias = segs[-1].split("@")
            segs = segs[:-1] + [name]
        elif segs:
            alias = segs[-1]
        out.append((segs, alias))
    return out


def absolute(base, segs, mods=None):
    """Absolute module path of `segs` written in module `base`, or None (std, external). A
    path may also start at a child module of `base` (`use segment::Lifecycle` in a `mod.rs`)."""
    if not segs:
        return None
    here = mods.get(base) if mods is not None else None
    if here is not None and segs[0] in here.children:
        return tuple(base) + tuple(segs)
    path = list(base)
    if segs[0] == "crate":
        path, segs = [], segs[1:]
    elif segs[0] in ("super", "self"):
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                if not path:
                    return None
                path.pop()
            segs = segs[1:]
    else:
        return None
    return tuple(path) + tuple(segs)


def build(mods):
    for path, m in mods.items():
        scopes = inline_scopes(m.code)
        for pos, text in parse_uses(m.code):
            if inline_path(scopes, pos):
                continue  # a use inside an inline module is not an item of this module
            for segs, alias in expand_use(text):
                target = absolute(path, segs, mods)
                if target is None:
                    continue
                if segs[-1] == "*":
                    m.globs.append(target[:-1])
                elif segs[-1] == "self":
                    m.uses[target[-2] if alias == "self" else alias] = target[:-1]
                else:
                    m.uses[alias] = target


def defines(m, name):
    return re.search(
        r"\b(?:fn|struct|enum|trait|type|const|static|union|macro_rules!)\s+" + re.escape(name) + r"\b", m.code
    )


def resolve(mods, path, seen=None):
    """The module whose file defines the item at absolute `path` (a module path or an item)."""
    seen = seen or set()
    if path in seen:
        return None
    seen.add(path)
    cur = mods[()]
    for i, name in enumerate(path):
        if name in cur.children:
            cur = cur.children[name]
            continue
        if name in cur.uses:
            return resolve(mods, cur.uses[name] + tuple(path[i + 1:]), seen)
        for g in cur.globs:
            gm = mods.get(g)
            if gm is not None and (name in gm.children or name in gm.uses or defines(gm, name)):
                return resolve(mods, g + tuple(path[i:]), seen)
        return cur  # an item defined in `cur`'s file (or a variant/method of one)
    return cur


PATH = re.compile(r"(?<![\w:$])((?:crate|super|self)(?:::\w+)+)")


def arrows(mods):
    """file -> {file: [line numbers]}"""
    out = collections.defaultdict(lambda: collections.defaultdict(list))
    for path, m in mods.items():
        code = m.code
        scopes = inline_scopes(code)
        refs = []
        for pos, text in parse_uses(code):
            for segs, _ in expand_use(text):
                refs.append((pos, [s for s in segs if s != "*"]))
        use_spans = [(mm.start(), mm.end()) for mm in re.finditer(r"\buse\s+[^;]+;", code)]
        for mm in PATH.finditer(code):
            if any(s <= mm.start() < e for s, e in use_spans):
                continue
            refs.append((mm.start(), mm.group(1).split("::")))
        for pos, segs in refs:
            base = path + inline_path(scopes, pos)
            target = absolute(base, segs, mods)
            if target is None:
                continue
            if segs and segs[-1] == "self":
                target = target[:-1]
            dest = resolve(mods, target)
            if dest is None or dest.file == m.file:
                continue
            if dest.path[: len(path)] == path:
                continue  # a module reaching into its own descendants: one unit (see the doc)
            line = code.count("\n", 0, pos) + 1
            out[m.file][dest.file].append(line)
    return out


def sccs(nodes, edges):
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(comp)

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            strong(v)
    return [c for c in comps if len(c) > 1]


def shortest_cycle(comp, edges):
    comp = set(comp)
    best = None
    for start in sorted(comp):
        prev, queue = {start: None}, collections.deque([start])
        while queue:
            v = queue.popleft()
            for w in edges.get(v, {}):
                if w == start:
                    cyc, x = [start], v
                    while x != start:
                        cyc.append(x)
                        x = prev[x]
                    cyc = [start] + cyc[1:][::-1]
                    if best is None or len(cyc) < len(best):
                        best = cyc
                    queue.clear()
                    break
                if w in comp and w not in prev:
                    prev[w] = v
                    queue.append(w)
    return best


def check(src):
    """Circles between the files of the crate rooted at `src`; returns how many."""
    global SRC
    SRC = src
    mods = module_files()
    build(mods)
    edges = arrows(mods)
    files = sorted({m.file for m in mods.values()})
    rel = lambda f: str(f.relative_to(ROOT))
    comps = sccs(files, edges)
    name = rel(src)
    if not comps:
        n = sum(len(v) for v in edges.values())
        print(f"check_imports: {name}: {len(files)} files, {n} arrows between files, no circle")
        return 0
    for comp in comps:
        cyc = shortest_cycle(comp, edges)
        print("circle: " + " -> ".join(rel(f) for f in cyc + [cyc[0]]))
        if len(comp) > len(cyc):
            print("    (its component, every file on some circle: " + ", ".join(sorted(rel(f) for f in comp)) + ")")
        for a, b in zip(cyc, cyc[1:] + [cyc[0]]):
            lines = ", ".join(str(x) for x in sorted(set(edges[a][b]))[:6])
            print(f"    {rel(a)} -> {rel(b)}  (lines {lines})")
    print(f"check_imports: {name}: {len(comps)} circle(s) between files")
    return len(comps)


def main():
    return 1 if sum(check(src) for src in CRATES) else 0


if __name__ == "__main__":
    sys.exit(main())
