"""The package's structure, read from its source with ``ast``: imports flow one way, and no
function is longer than a screen.

The import graph has one node per module of ``rl_mind/`` and an edge for every import of
another of its modules, wherever it is written (at the top, inside a function, under
``TYPE_CHECKING``, under ``if __name__ == "__main__":``). A package's ``__init__`` only
re-exports the names of its modules, so it is not a node: an import of a name from a
package (``from rl_mind.envs import PongDuelRules``) is an edge to the module the
``__init__`` takes that name from (``rl_mind.envs.pong_rules``), and a plain
``import rl_mind`` is no edge at all. (Importing any module runs its packages' ``__init__``
too; counting that as an edge would make every module of the package root a circle.)
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parents[1] / "rl_mind"
MAX_FUNCTION_LINES = 80
TRAINER = "rl_mind.selfplay.trainer"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


SOURCES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
PACKAGES = {name for name, path in SOURCES.items() if path.name == "__init__.py"}


def imports(name: str) -> Iterator[tuple[str, str | None]]:
    """``(module, imported name or None)`` for every import in module ``name`` of a module of
    the package, relative imports resolved."""
    tree = ast.parse(SOURCES[name].read_text(encoding="utf-8"))
    here = name.split(".") if name in PACKAGES else name.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "rl_mind":
                    yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module.split(".")[0] == "rl_mind":
                for alias in node.names:
                    yield module, alias.name


def target(module: str, name: str | None, seen: frozenset[str] = frozenset()) -> str | None:
    """The module an import reaches: a submodule, the module itself, or (for a name taken
    from a package) the module that the package's ``__init__`` takes it from; ``None`` for
    the package itself."""
    if name is not None and f"{module}.{name}" in SOURCES:
        return f"{module}.{name}"
    if module not in PACKAGES:
        return module if module in SOURCES else None
    if name is None or module in seen:
        return None
    for source, imported in imports(module):  # (what the __init__ imports, lazily included)
        if imported == name or (imported is None and source.rsplit(".", 1)[-1] == name):
            return target(source, imported, seen | {module})
    return None  # (a name the __init__ defines itself, e.g. __version__)


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in SOURCES if name not in PACKAGES}
    for name in graph:
        for module, imported in imports(name):
            reached = target(module, imported)
            if reached is not None and reached != name and reached not in PACKAGES:
                graph[name].add(reached)
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A circle of imports (its modules in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_the_graph_sees_imports_of_every_kind() -> None:
    graph = import_graph()
    assert "rl_mind.core" in graph["rl_mind.collectors"]  # at the top of the module
    # a name taken from a package leads to the module that defines it
    assert target("rl_mind.envs", "PongDuelRules") == "rl_mind.envs.pong_rules"
    assert target("rl_mind.selfplay", "OpponentPool") == "rl_mind.selfplay.pool"
    assert target("rl_mind.selfplay", "_settings") == "rl_mind.selfplay._settings"
    assert target("rl_mind", "__version__") is None
    # an import inside a function (the arena loads a run's checkpoint on demand)
    assert "rl_mind.selfplay.checkpoint" in graph["rl_mind.arena.submission"]
    # a lazy name of a package (imported when first used) is followed too
    assert target("rl_mind.selfplay", "PongPolicy") == TRAINER


def test_no_module_imports_itself_back() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "a circle of imports: " + " -> ".join(cycle or [])


def test_the_finder_finds_a_circle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"b"}}) is None


def test_the_trainer_the_student_reads_imports_neither_the_job_its_report_nor_the_arena() -> None:
    reached = reachable(import_graph(), TRAINER)
    wrong = sorted(
        module
        for module in reached
        if module in ("rl_mind.selfplay.job", "rl_mind.selfplay.report")
        or module.startswith("rl_mind.arena")
    )
    assert not wrong, f"{TRAINER} imports (directly or not) {wrong}"


def test_self_play_never_imports_the_arena() -> None:
    graph = import_graph()
    selfplay = [name for name in SOURCES if name.startswith("rl_mind.selfplay")]
    wrong = {}
    for name in selfplay:  # (the package's __init__ included: it is read, not a node)
        direct = {target(module, imported) for module, imported in imports(name)}
        reached = set().union(*(reachable(graph, m) | {m} for m in direct if m in graph))
        arena = sorted(m for m in reached if m.startswith("rl_mind.arena"))
        if arena:
            wrong[name] = arena
    assert not wrong, f"self-play modules that import the arena: {wrong}"


def test_the_collectors_use_no_private_name_of_another_module() -> None:
    tree = ast.parse((PACKAGE / "collectors.py").read_text(encoding="utf-8"))
    modules = set()  # names bound to modules of the package (import rl_mind.env as env)
    private = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rl_mind"):
            for alias in node.names:
                if f"{node.module}.{alias.name}" in SOURCES:
                    modules.add(alias.asname or alias.name)
                elif alias.name.startswith("_"):
                    private.append(f"from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("rl_mind"):
                    modules.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            owner = ast.unparse(node.value)
            if owner in modules or owner.startswith("rl_mind."):
                private.append(f"{owner}.{node.attr}")
    assert not private, f"rl_mind/collectors.py uses private names of other modules: {private}"


def function_lengths() -> Iterator[tuple[str, int]]:
    """``("path:line name", lines)`` for every function and method of the package (nested
    ones too), from its ``def`` line to its last line (decorators not counted)."""
    for path in SOURCES.values():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}"
                yield where, node.end_lineno - node.lineno + 1


def test_the_function_lengths_are_measured() -> None:
    from rl_mind.selfplay.ratings import bradley_terry

    lengths = {where.split(" ", 1)[1]: length for where, length in function_lengths()}
    assert len(lengths) > 300  # (methods and nested functions included)
    assert lengths["bradley_terry"] == len(inspect.getsourcelines(bradley_terry)[0])


def test_no_function_is_longer_than_a_screen() -> None:
    long = {where: n for where, n in function_lengths() if n > MAX_FUNCTION_LINES}
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


# The sizes of the building blocks' files (lines, docstrings and comments included).
MAX_LINES = {
    "collectors.py": 300,
    "env.py": 450,
    "core.py": 400,
    "data.py": 380,
    "checkpoints.py": 400,
    "videos.py": 400,
    "evaluation.py": 400,
}
MAX_CORE_TOTAL = 1_500  # collectors, env, core and data together


def test_the_building_blocks_stay_within_their_sizes() -> None:
    lines = {name: len((PACKAGE / name).read_text().splitlines()) for name in MAX_LINES}
    over = {name: count for name, count in lines.items() if count > MAX_LINES[name]}
    assert not over, f"over their line counts {MAX_LINES}: {over}"
    core = sum(lines[name] for name in ("collectors.py", "env.py", "core.py", "data.py"))
    assert core <= MAX_CORE_TOTAL, f"collectors, env, core and data: {core} lines"


def private_imports(name: str) -> list[str]:
    """The ``_private`` names module ``name`` takes from another module of the package:
    ``from m import _x`` and ``m._x`` on a name bound to a module. A private *module*
    (``rl_mind._validation``, ``rl_mind.selfplay._settings``) and its public names are fine:
    it is the package's own internal module, imported by name."""
    tree = ast.parse(SOURCES[name].read_text(encoding="utf-8"))
    here = name.split(".") if name in PACKAGES else name.split(".")[:-1]
    modules: set[str] = set()  # local names bound to modules of the package
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "rl_mind":
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            if module.split(".")[0] != "rl_mind":
                continue
            for alias in node.names:
                if f"{module}.{alias.name}" in SOURCES:
                    modules.add(alias.asname or alias.name)
                elif alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"from {module} import {alias.name}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and ast.unparse(node.value) in modules | {"rl_mind"}
            and f"{ast.unparse(node.value)}.{node.attr}" not in SOURCES
        ):
            found.append(f"{ast.unparse(node.value)}.{node.attr}")
    return found


def test_no_module_imports_a_private_name_of_another_module() -> None:
    found = {name: names for name in SOURCES if (names := private_imports(name))}
    assert not found, f"private names imported across modules: {found}"


def test_the_private_name_finder_finds_them(tmp_path: Path, monkeypatch: Any) -> None:
    source = tmp_path / "probe.py"
    source.write_text(
        "import rl_mind.core as core\nfrom rl_mind.env import _checked_seed, VecEnv\n"
        "from rl_mind import _validation\nfrom rl_mind._validation import as_int\n"
        "core._private(1)\n_validation.as_int(2)\n"
    )
    monkeypatch.setitem(SOURCES, "rl_mind.probe", source)
    assert private_imports("rl_mind.probe") == [
        "from rl_mind.env import _checked_seed",
        "core._private",
    ]


def test_no_module_below_the_arena_imports_it() -> None:
    # The arena is the top floor: what it builds on (self-play, the environments, the
    # building blocks) never imports it. The package's __init__ re-exports export_agent and
    # the command line (__main__) dispatches to it; neither is a module below it.
    graph = import_graph()
    below = [n for n in graph if not n.startswith("rl_mind.arena") and n != "rl_mind.__main__"]
    wrong = {n: sorted(m for m in graph[n] if m.startswith("rl_mind.arena")) for n in below}
    wrong = {n: arena for n, arena in wrong.items() if arena}
    assert not wrong, f"modules below the arena that import it: {wrong}"
