"""The documentation site (mkdocs.yml, docs/) builds strictly, and documents the whole API.

The site is built once, as CI builds it (``mkdocs build --strict``), into a temporary
folder; the tests then read the built pages: every name in ``rl_mind.__all__`` and in every
submodule's ``__all__`` must have its entry (an anchor named after its dotted path) in the
API reference, and every practical notebook must be a page, shown without being run.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import re
import subprocess
import sys
import warnings
from pathlib import Path
from types import ModuleType

import pytest

import rl_mind
from tests.readme_blocks import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def public_modules() -> list[ModuleType]:
    """``rl_mind`` and every public submodule (``__main__`` modules run a command on
    import; a module whose name starts with ``_`` is private)."""
    names = [
        info.name
        for info in pkgutil.walk_packages(rl_mind.__path__, "rl_mind.")
        if not info.name.rsplit(".", 1)[-1].startswith("_")
    ]
    with warnings.catch_warnings():  # (rl_mind.profiles, 0.4's module, warns when imported)
        warnings.filterwarnings("ignore", "rl_mind.profiles is rl-mind 0.4's", DeprecationWarning)
        return [rl_mind, *(importlib.import_module(name) for name in names)]


def public_names() -> list[tuple[ModuleType, str]]:
    """``(module, name)`` for every name in a module's ``__all__``."""
    return [
        (module, name) for module in public_modules() for name in getattr(module, "__all__", [])
    ]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # (Material's banner about MkDocs 2)
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    log = build.stdout + build.stderr
    assert build.returncode == 0, f"mkdocs build --strict failed:\n{log[-6000:]}"
    warnings = [line for line in log.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert not warnings, "\n".join(warnings)
    return folder


@pytest.fixture(scope="module")
def reference_anchors(site: Path) -> set[str]:
    ids: set[str] = set()
    for page in (site / "reference").rglob("*.html"):
        ids.update(re.findall(r'\bid="([^"]+)"', page.read_text(encoding="utf-8")))
    return ids


def test_public_names_are_found() -> None:
    names = public_names()
    assert len({name for module, name in names if module is rl_mind}) == len(rl_mind.__all__)
    assert len(names) > 2 * len(rl_mind.__all__), "the submodules' __all__ were not read"


def test_every_public_name_has_a_reference_entry(reference_anchors: set[str]) -> None:
    # A name re-exported by a package (rl_mind.Action, rl_mind.envs.PongDuelEnv) is
    # documented once, in a module that exports the very same object.
    missing = []
    for module, name in public_names():
        obj = getattr(module, name)
        homes = [
            other.__name__
            for other in public_modules()
            if name in getattr(other, "__all__", []) and getattr(other, name) is obj
        ]
        if not any(f"{home}.{name}" in reference_anchors for home in homes):
            missing.append(f"{module.__name__}.{name}")
    assert not missing, f"public names without an entry in the API reference: {missing}"


def test_every_public_module_has_a_reference_entry(reference_anchors: set[str]) -> None:
    missing = [m.__name__ for m in public_modules() if m.__name__ not in reference_anchors]
    assert not missing, f"modules without an entry in the API reference: {missing}"


def test_every_public_class_and_function_has_a_docstring() -> None:
    # The reference shows the docstring: an entry without one documents only a signature.
    bare = [
        f"{module.__name__}.{name}"
        for module, name in public_names()
        if (inspect.isclass(obj := getattr(module, name)) or inspect.isfunction(obj))
        and not (obj.__doc__ or "").strip()
    ]
    assert not bare, f"public names without a docstring: {bare}"


def test_the_reference_index_links_every_name_of_the_package_root(site: Path) -> None:
    index = (ROOT / "docs" / "reference" / "index.md").read_text(encoding="utf-8")
    missing = [name for name in rl_mind.__all__ if f"[`{name}`]" not in index]
    assert not missing, f"docs/reference/index.md does not list: {missing}"
    # (strict mode has checked that each of those links resolves)
    assert (site / "reference" / "index.html").is_file()


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_every_practical_is_a_page_shown_without_running_it(site: Path, notebook: Path) -> None:
    page = site / "notebooks" / notebook.stem / "index.html"
    assert page.is_file(), f"{notebook.name} has no page"
    html = page.read_text(encoding="utf-8")
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    title = next(
        line.lstrip("# ").strip()
        for cell in cells
        if cell["cell_type"] == "markdown"
        for line in "".join(cell["source"]).splitlines()
        if line.startswith("# ")
    )
    assert title.split(" ")[0] in html, f"the page of {notebook.name} lacks its title {title!r}"
    # The committed notebooks carry no outputs, and the build must not have added any.
    assert not any(cell.get("outputs") for cell in cells if cell["cell_type"] == "code")
    output_area = re.search(r'class="[^"]*\bjp-OutputArea-output\b', html)
    assert output_area is None, f"the page of {notebook.name} shows outputs"
    assert (page.parent / notebook.name).is_file(), "the notebook is offered for download"


def test_the_practicals_are_in_the_navigation() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    missing = [nb.name for nb in NOTEBOOKS if f"notebooks/{nb.name}" not in config]
    assert not missing, f"mkdocs.yml's nav lacks the practicals {missing}"
