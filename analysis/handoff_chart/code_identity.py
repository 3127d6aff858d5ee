"""The source files a drawn chart depends on: the drawing module, what it imports, and the data files those read.

A cached chart (chart_cache.py) is keyed by a digest of these files, so
that a change to any of them draws it again, and a change to anything
else leaves it be: a run restored from the run archive has no trace to
draw from, so a chart keyed too widely is lost for nothing.

The set is found, not listed: from the drawing module, every module of
the given packages that it imports (at the top or inside a function),
and so on through those; with each of them, the TOML data files it
names (`"bounds.toml"`) that exist in its package's `data/` or in the
shared data folder. Modules of other packages are not followed: the
caller says which packages' changes may change what it keys.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

DATA_SUFFIX = ".toml"


def imported_names(tree: ast.AST) -> Iterable[str]:
    """Every module a parsed source imports, with `from P import M` also giving `P.M` (M may be a module)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def with_parents(name: str) -> list[str]:
    """A dotted module name and its packages', which importing it runs too: `a.b.c` -> a, a.b, a.b.c."""
    parts = name.split(".")
    return [".".join(parts[: count + 1]) for count in range(len(parts))]


def module_file(name: str, project: Path, packages: tuple[str, ...]) -> Path | None:
    """The source file of a project module by its dotted name, or None (not ours, or a name that is not a module)."""
    if not any(name == package or name.startswith(f"{package}.") for package in packages):
        return None
    base = project.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def named_data_files(tree: ast.AST, module: Path, shared_data: Path) -> set[Path]:
    """The data files a module names by a string constant, found in its package's data/ or the shared data folder."""
    names = {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(DATA_SUFFIX)
    }
    folders = (module.parent / "data", shared_data)
    return {folder / name for name in names for folder in folders if (folder / name).is_file()}


def reached_sources(entry: Path, project: Path, packages: tuple[str, ...], shared_data: Path) -> tuple[Path, ...]:
    """The entry module, the project modules it reaches by imports, and their data files, sorted."""
    modules: set[Path] = {entry.resolve()}
    data: set[Path] = set()
    queue = [entry.resolve()]
    while queue:
        module = queue.pop()
        tree = ast.parse(module.read_text(encoding="utf-8"), filename=str(module))
        data |= named_data_files(tree, module, shared_data)
        for name in {prefix for imported in imported_names(tree) for prefix in with_parents(imported)}:
            found = module_file(name, project, packages)
            if found is not None and found.resolve() not in modules:
                modules.add(found.resolve())
                queue.append(found.resolve())
    return tuple(sorted(modules | {path.resolve() for path in data}))
