"""Every ```python block of rl_mind.md and of the guide pages (docs/) runs.

The README's blocks run in order in one namespace, and so do each guide page's (as in a
notebook); blocks fenced as ```python {.no-run} are shown only (fragments of a loop); the
```python {.dqn-example} block is run and checked by tests/test_dqn_composes.py.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import matplotlib
import pytest

import rl_mind
from tests.readme_blocks import README, ROOT, blocks, guide_pages, run_in_module

PAGES_WITH_CODE = [page for page in guide_pages() if blocks("python", [page])]


@pytest.fixture
def notebook_like(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a block may rely on: a folder of its own, the fast-test profile, no display."""
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)  # blocks may write runs, videos, plots
    monkeypatch.setenv("RL_MIND_FAST_TEST", "1")
    monkeypatch.setenv("RL_MIND_OUTPUTS", str(tmp_path / "outputs"))


@pytest.mark.usefixtures("notebook_like")
def test_readme_code_blocks_run() -> None:
    found = blocks("python", [README])
    assert found, "rl_mind.md lost its example"
    run_in_module("rl_mind_readme", found)


@pytest.mark.usefixtures("notebook_like")
def test_the_first_agent_is_seeded_and_starts_where_the_readme_says() -> None:
    first = blocks("python", [README])[0]
    assert "torch.manual_seed(" in first.code, "the README's first agent must be seeded"
    printed = []
    for _ in range(2):
        with contextlib.redirect_stdout(io.StringIO()) as out:
            run_in_module("rl_mind_readme_first_agent", [first])
        printed.append(out.getvalue())
    assert printed[0] == printed[1], "the seeded example printed other returns a second time"
    claimed = re.search(r"mean return climbs from (\d+) at\s+iteration 0", README.read_text())
    assert claimed is not None, "rl_mind.md no longer says where the first agent starts"
    assert printed[0].splitlines()[0] == f"0 mean return {claimed.group(1)}"


@pytest.mark.usefixtures("notebook_like")
@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=lambda page: page.stem)
def test_guide_code_blocks_run(page: Path) -> None:
    run_in_module(f"rl_mind_guide_{page.stem.replace('-', '_')}", blocks("python", [page]))


def test_the_guide_kept_its_examples() -> None:
    # The guide had 19 runnable examples when it moved from rl_mind.md into docs/.
    assert len(blocks("python")) >= 20, "the README and the guide lost examples"
    assert len(PAGES_WITH_CODE) >= 10


def test_the_guide_documents_every_public_name() -> None:
    text = "\n".join(page.read_text(encoding="utf-8") for page in [README, *guide_pages()])
    missing = [name for name in rl_mind.__all__ if not re.search(rf"\b{re.escape(name)}\b", text)]
    assert not missing, f"public names not documented in the guide: {missing}"


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 250, f"rl_mind.md has {lines} lines; the rest belongs in docs/"


def test_readme_starts_with_the_two_newcomer_commands() -> None:
    head = README.read_text(encoding="utf-8")[:3000]
    assert "rl-mind selfplay" in head, "the first command runs the main job"
    assert "pip install" in head and "pytest" in head, "the second installs and runs the tests"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = re.search(
        r"^\s*(pip install -e \"\.\[test\]\" && python -m pytest[^\n]*)", head, re.M
    )
    assert test_command is not None, "rl_mind.md must show the test command on its own line"
    assert test_command.group(1).strip() in ci, ".ci/run must run the README's test command"
    assert os.access(ROOT / ".ci" / "run", os.R_OK)


def test_ci_runs_the_test_command_in_the_virtual_environment_the_readme_makes() -> None:
    # (CI used to install into the machine's own Python, where a newcomer's failure hid)
    head = README.read_text(encoding="utf-8")[:3000]
    venv = re.search(r"^(python -m venv \.venv && \. \.venv/bin/activate)$", head, re.M)
    assert venv is not None, "rl_mind.md must show how to make its virtual environment"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line.strip() for line in ci.splitlines() if line.strip() and line[0] != "#"]
    made = commands.index(venv.group(1))
    torch = commands.index('pip install --quiet "torch==2.13.0"')
    docs = next(i for i, line in enumerate(commands) if "mkdocs build --strict" in line)
    wheel = next(i for i, line in enumerate(commands) if "wheel_test.sh" in line)
    tests = commands.index('pip install -e ".[test]" && python -m pytest')
    assert made < torch < docs < wheel < tests, commands
    assert not any("pip install" in line for line in commands[:made]), "installed before the venv"


def test_ci_builds_the_site_strictly() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^[^#\n]*mkdocs build --strict", ci, re.M), ".ci/run must build the docs"


def test_the_readme_links_work_on_the_package_index_and_name_pages_that_exist() -> None:
    # The package index shows rl_mind.md without the repository: a relative link is dead
    # there, and so is a link to a site this release is not published on.
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links, "the README links rl-mind 0.4's documentation, for 0.4 users"
    assert all(link.startswith("https://") for link in links), links
    pages = re.findall(r"`(docs/[\w/.-]+\.md)`", text)
    table = re.findall(r"\| `([\w-]+\.md)` \|$", text, re.M)
    assert pages and table
    missing = [p for p in pages + [f"docs/guide/{t}" for t in table] if not (ROOT / p).is_file()]
    assert not missing, f"rl_mind.md names guide pages that do not exist: {missing}"


def test_the_documentation_address_is_the_same_in_mkdocs_yml_pyproject_and_the_readme() -> None:
    site = re.search(r"^site_url:\s*(\S+)", (ROOT / "mkdocs.yml").read_text(), re.M)
    pyproject = (ROOT / "pyproject.toml").read_text()
    urls = re.search(r"^\[project\.urls\]\n((?:[^\[\n].*\n)*)", pyproject, re.M)
    listed = re.search(r'^Documentation\s*=\s*"([^"]+)"', urls.group(1), re.M) if urls else None
    documentation = listed.group(1) if listed else None
    # one address, or none while this release's site is not published
    assert (site.group(1) if site else None) == documentation
    readme = README.read_text(encoding="utf-8")
    if documentation is not None:
        assert documentation in readme
    # rl-mind 0.4's site serves 0.4's pages only (api.html), not this release's guide
    assert "master-dac.isir.upmc.fr/rl/rl-mind/guide" not in readme
