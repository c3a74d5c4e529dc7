#!/usr/bin/env python3
"""The shape of the workspace: what a newcomer meets.

Prints, for the crates under crates/: source lines per crate (src/ only, as the goals count
them) and the binary crate's share, the largest files, every file over 500 lines (tests
included), the median file length, the names each library crate exports at its root, and
the import circles between files (a file that takes names from another file which, directly
or through others, takes names back; a parent's `mod child;` is not an import).

    python3 scripts/shape.py [--root DIR] [--json]

It reads the code as text: `use` declarations and `crate::`/`super::`/`self::` paths in code
outside `#[cfg(test)]` blocks, resolved to files through the module tree and one level of
`pub use` re-exports. It runs nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

ITEM = re.compile(r"^pub\s+(?:unsafe\s+)?(?:async\s+)?(fn|struct|enum|trait|type|const|static|mod)\s+(\w+)", re.M)
PUB_USE = re.compile(r"^pub\s+use\s+([^;]+);", re.M | re.S)
USE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M | re.S)
INLINE = re.compile(r"\b((?:crate|super|self)(?:::\w+)+)")
MOD_DECL = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//")[0] if "//" in line and '"' not in line else line for line in text.splitlines())


def without_tests(text: str) -> str:
    """Drops everything from the first `#[cfg(test)]` on (test modules close the files)."""
    i = text.find("#[cfg(test)]")
    return text if i < 0 else text[:i]


def expand(tree: str) -> list[str]:
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = re.sub(r"\s+", "", tree)
    out: list[str] = []

    def walk(prefix: str, s: str) -> None:
        if "{" not in s:
            for part in split_top(s):
                part = part.split(" as ")[0]
                if part:
                    out.append(prefix + part)
            return
        i = s.index("{")
        head, body = s[:i], s[i + 1 : s.rindex("}")]
        for part in split_top(body):
            walk(prefix + head, part)

    def split_top(s: str) -> list[str]:
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        return [p for p in parts if p]

    walk("", tree)
    return [re.sub(r"as\w+$", "", p) for p in out]


class Crate:
    def __init__(self, root: Path):
        self.root = root
        self.name = root.name
        src = root / "src"
        self.files = sorted(src.rglob("*.rs"))
        self.tests = sorted(p for p in root.rglob("*.rs") if "src" not in p.relative_to(root).parts[:1])
        self.module_of: dict[Path, tuple[str, ...]] = {}
        self.file_of: dict[tuple[str, ...], Path] = {}
        for f in self.files:
            rel = f.relative_to(src).with_suffix("").parts
            if rel[-1] in ("lib", "main") and len(rel) == 1:
                mod: tuple[str, ...] = ()
            elif rel[-1] == "mod":
                mod = rel[:-1]
            else:
                mod = rel
            self.module_of[f] = mod
            self.file_of.setdefault(mod, f)
        self.text = {f: strip_comments(f.read_text()) for f in self.files}
        self.reexports: dict[tuple[str, ...], dict[str, tuple[str, ...]]] = {}
        for f, t in self.text.items():
            mod = self.module_of[f]
            table: dict[str, tuple[str, ...]] = {}
            for m in PUB_USE.finditer(t):
                for path in expand(m.group(1)):
                    segs = tuple(s for s in path.split("::") if s)
                    if segs:
                        table[segs[-1]] = self.absolute(mod, segs, f)
            self.reexports[mod] = table
        self.is_lib = (root / "src" / "lib.rs").exists()

    def absolute(self, mod: tuple[str, ...], segs: tuple[str, ...], f: Path) -> tuple[str, ...]:
        """A path as written in module `mod` (file f), from the crate root."""
        base = list(mod)
        is_dir_mod = f.name in ("mod.rs", "lib.rs", "main.rs")
        if segs[0] == "crate":
            return segs[1:]
        if segs[0] == "self":
            return tuple(base) + segs[1:]
        if segs[0] == "super":
            cur = base[:]
            rest = list(segs)
            while rest and rest[0] == "super":
                rest.pop(0)
                if cur:
                    cur.pop()
            return tuple(cur) + tuple(rest)
        # A bare path: a child module of this one, if there is one.
        if tuple(base) + (segs[0],) in self.file_of:
            return tuple(base) + segs
        _ = is_dir_mod
        return ()

    def resolve(self, path: tuple[str, ...]) -> Path | None:
        """The file that defines what `path` (from the crate root) names."""
        for k in range(len(path), -1, -1):
            prefix = path[:k]
            if prefix in self.file_of:
                rest = path[k:]
                if rest and rest[0] in self.reexports.get(prefix, {}):
                    target = self.reexports[prefix][rest[0]]
                    if target and target != path:
                        inner = self.resolve_module_only(target)
                        if inner is not None:
                            return inner
                return self.file_of[prefix]
        return None

    def resolve_module_only(self, path: tuple[str, ...]) -> Path | None:
        for k in range(len(path), -1, -1):
            if path[:k] in self.file_of:
                return self.file_of[path[:k]]
        return None

    def edges(self) -> dict[Path, set[Path]]:
        graph: dict[Path, set[Path]] = {f: set() for f in self.files}
        for f, t in self.text.items():
            mod = self.module_of[f]
            code = without_tests(t)
            children = {mod + (m,) for m in MOD_DECL.findall(code)}
            paths: list[tuple[str, ...]] = []
            # A `pub use` re-export is the module's facade, like `mod`, not a use of the item.
            for m in USE.finditer(code):
                if m.group(0).lstrip().startswith("pub use"):
                    continue
                for p in expand(m.group(1)):
                    segs = tuple(s for s in p.split("::") if s and s != "*")
                    if segs and segs[0] in ("crate", "super", "self") or (segs and mod + (segs[0],) in self.file_of):
                        paths.append(self.absolute(mod, segs, f))
            for m in INLINE.finditer(PUB_USE.sub("", code)):
                paths.append(self.absolute(mod, tuple(m.group(1).split("::")), f))
            for p in paths:
                if not p and mod == ():
                    continue
                target = self.resolve(p)
                if target is None or target == f:
                    continue
                # A parent naming its own child module (declared with `mod`) is structure.
                if self.module_of[target] in children and len(p) == len(self.module_of[target]):
                    continue
                graph[f].add(target)
        return graph

    def public_names(self) -> int:
        if not self.is_lib:
            return 0
        t = without_tests(self.text[self.root / "src" / "lib.rs"])
        names = set()
        for m in PUB_USE.finditer(t):
            for p in expand(m.group(1)):
                names.add(p.split("::")[-1])
        for _kind, name in ITEM.findall(t):
            names.add(name)
        return len(names)


def circles(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    """Strongly connected components of more than one file (Tarjan)."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on: set[Path] = set()
    out: list[list[Path]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: Path) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
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
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def lines(p: Path) -> int:
    return sum(1 for _ in p.open())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=Path(__file__).resolve().parent.parent, type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    root: Path = args.root
    crates = [Crate(d) for d in sorted((root / "crates").iterdir()) if (d / "Cargo.toml").exists()]
    per_crate = {c.name: sum(lines(f) for f in c.files) for c in crates}
    total = sum(per_crate.values())
    binary = [c.name for c in crates if not c.is_lib]
    every = [(lines(f), str(f.relative_to(root))) for c in crates for f in c.files + c.tests]
    src_lengths = [lines(f) for c in crates for f in c.files]
    found = []
    for c in crates:
        for comp in circles(c.edges()):
            found.append([str(f.relative_to(root)) for f in comp])
    report = {
        "source_lines": total,
        "lines_per_crate": per_crate,
        "binary_crates": binary,
        "binary_share": {b: round(per_crate[b] / total, 4) for b in binary},
        "files": len(src_lengths),
        "median_file_lines": statistics.median(src_lengths),
        "largest_file": max(every),
        "files_over_500": sorted(every, reverse=True)[: sum(1 for n, _ in every if n > 500)],
        "public_names": {c.name: c.public_names() for c in crates if c.is_lib},
        "circles": found,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"source lines (crates/*/src): {total}")
    for name, n in per_crate.items():
        tag = "  (binary)" if name in binary else ""
        print(f"  {name:<20} {n:>6}  {n / total:6.1%}  public names: {report['public_names'].get(name, '-')}{tag}")
    print(f"files: {len(src_lengths)}, median {report['median_file_lines']} lines; largest {every and max(every)[1]} ({max(every)[0]})")
    print(f"files over 500 lines (tests included): {len(report['files_over_500'])}")
    for n, f in report["files_over_500"]:
        print(f"  {n:>5} {f}")
    print(f"import circles: {len(found)}")
    for comp in found:
        print("  " + " <-> ".join(comp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
