"""Import direction (issue 33): a package imports only its own layer's modules and the layers below it.

The layers are listed once, from the ground. Every ``import`` and ``from ... import`` in every
module under ``src/sdckit`` counts (module level, inside functions, under ``TYPE_CHECKING``, and
the relative forms); no exception list. A second check finds import circles between modules
(a strongly connected component of more than one module), from every import that runs: at module
level or inside a function, not under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
ROOT = SRC / "sdckit"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("_checks", "_scale"),
    ("_io",),
    ("risk", "_estimator"),
    ("anonymize", "microagg", "synth"),
    ("spectral", "plan", "datasets"),
    ("pipeline", "protocol"),
    ("report",),
    ("compare",),
    ("app",),
    ("cli",),
)
"""From the ground up; packages on one floor do not import each other."""

LEVEL = {name: i for i, floor in enumerate(LAYERS) for name in floor}


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _top(module: str) -> str | None:
    """The top package of ``sdckit.x.y`` (``x``), None for ``sdckit`` itself or another library."""
    parts = module.split(".")
    if parts[0] != "sdckit" or len(parts) < 2:
        return None
    return parts[1]


def _imports(path: Path, *, run_time_only: bool = False) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    """(line, absolute module, imported names) for every import of the file."""
    module = _module_name(path)
    package = module if _is_package(path) else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    nodes: list[ast.AST] = []
    if run_time_only:
        # what runs: module level and inside functions, not the blocks under ``if TYPE_CHECKING:``
        stack: list[ast.AST] = [tree]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                stack.extend(node.orelse)
                continue
            nodes.append(node)
            stack.extend(ast.iter_child_nodes(node))
    else:
        nodes = list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            yield node.lineno, target, tuple(a.name for a in node.names)


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(SRC.parent)}:{line}"


def test_every_package_has_a_layer() -> None:
    tops = {_top(m) for m in _modules()} - {None}
    assert tops <= set(LEVEL), f"packages without a layer: {sorted(tops - set(LEVEL))}"


def test_packages_import_only_their_own_and_lower_layers() -> None:
    bad: list[str] = []
    for module, path in _modules().items():
        here = _top(module)
        if here is None:  # sdckit/__init__.py: the catalogue, above every layer
            continue
        for line, target, _names in _imports(path):
            there = _top(target)
            if there is None or there == here:
                continue
            if LEVEL[there] >= LEVEL[here]:
                bad.append(f"{_where(path, line)}: {here} (layer {LEVEL[here]}) imports {target} (layer {LEVEL[there]})")
    assert not bad, "imports against the layers:\n" + "\n".join(bad)


def _edges() -> dict[str, set[tuple[str, str]]]:
    """module -> {(imported module, file:line)}: the imports between sdckit's modules that run.

    An import inside a function closes a circle as surely as one at the top (it only delays it);
    an import under ``if TYPE_CHECKING:`` never runs and does not count.
    """
    modules = _modules()
    out: dict[str, set[tuple[str, str]]] = {m: set() for m in modules}
    for module, path in modules.items():
        for line, target, names in _imports(path, run_time_only=True):
            if target not in modules:
                continue
            targets = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules] or [target]
            # ``from pkg import name``: the submodule when ``name`` is one, else the package
            if names and len(targets) < len(names) and targets[0] != target:
                targets.append(target)
            for t in targets:
                if t != module:
                    out[module].add((t, _where(path, line)))
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_circle_between_modules() -> None:
    edges = _edges()
    graph = {m: {t for t, _ in e} for m, e in edges.items()}
    report: list[str] = []
    for component in _cycles(graph):
        members = set(component)
        report.append("circle: " + " <-> ".join(component))
        for m in component:
            for t, where in sorted(edges[m]):
                if t in members:
                    report.append(f"  {where}: {m} imports {t}")
    assert not report, "import circles:\n" + "\n".join(report)


def test_the_checker_sees_function_level_and_relative_imports(tmp_path: Path) -> None:
    # the check itself: an import inside a function and a relative one are both seen
    pkg = tmp_path / "sdckit" / "risk"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    f = pkg / "_x.py"
    f.write_text("from . import _y\n\ndef g():\n    from sdckit.plan import plan_release\n")
    global SRC
    old = SRC
    SRC = tmp_path
    try:
        got = sorted((line, target) for line, target, _ in _imports(f))
    finally:
        SRC = old
    assert got == [(1, "sdckit.risk"), (4, "sdckit.plan")]


def test_a_circle_is_found() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# Imports inside functions (issue 33): each one says why it is not at the top of its module.
# The reasons in use: an optional extra's package (``# lazy: the frames extra``), a heavy library
# or a heavy part of sdckit kept off a light path (``# lazy: start-up time``), and the CLI's commands
# (``# lazy: sdckit --help stays fast``).


def _comment_lines(source: str) -> set[int]:
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            lines.add(tok.start[0])
    return lines


def _import_blocks(tree: ast.AST) -> Iterator[list[ast.Import | ast.ImportFrom]]:
    """Runs of consecutive import statements in the bodies inside functions (each run once)."""
    seen: set[int] = set()
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(func):
            for field in ("body", "orelse", "finalbody"):
                body = getattr(node, field, None)
                if not isinstance(body, list):
                    continue
                run: list[ast.Import | ast.ImportFrom] = []
                for stmt in [*body, None]:
                    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                        run.append(stmt)
                        continue
                    if run and run[0].lineno not in seen:
                        seen.add(run[0].lineno)
                        yield run
                    run = []


def _unreasoned(path: Path) -> list[tuple[int, str]]:
    """(line, module) of the function-level imports of ``path`` without a reason: no comment on
    their own lines, nor on the line right above the run of imports they belong to."""
    source = path.read_text(encoding="utf-8")
    comments = _comment_lines(source)
    out: list[tuple[int, str]] = []
    for run in _import_blocks(ast.parse(source)):
        if run[0].lineno - 1 in comments:
            continue
        for stmt in run:
            if not comments & set(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1)):
                target = stmt.names[0].name if isinstance(stmt, ast.Import) else "." * stmt.level + (stmt.module or "")
                out.append((stmt.lineno, target))
    return out


def test_every_function_level_import_gives_its_reason() -> None:
    bad: list[str] = []
    for path in _modules().values():
        for line, target in _unreasoned(path):
            bad.append(f"{_where(path, line)}: import of {target} inside a function, no reason given")
    assert not bad, (
        "move these imports to the top of the module, or say on the line above why they stay "
        "(e.g. '# lazy: the frames extra', '# lazy: start-up time'):\n" + "\n".join(bad)
    )


def test_the_reason_check_reads_lines_and_blocks(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text(
        "def a():\n"
        "    # lazy: start-up time\n"
        "    import scipy\n"
        "\n"
        "    from sdckit import risk\n"
        "    x = 1\n"
        "    import json\n"
        "    import yaml  # lazy: reason\n"
        "\n"
        "def b():\n"
        "    '# not a comment'\n"
        "    import os\n"
    )
    assert _unreasoned(f) == [(7, "json"), (12, "os")]
