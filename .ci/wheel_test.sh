#!/usr/bin/env bash
# The release as a student gets it: build the wheel, install it (not editable) into a fresh
# virtual environment, and from a folder outside the repository (so that the source tree is
# not what gets imported) run one practical (its solution notebook, fast-test profile) and
# the main job for a few seconds.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
started=$SECONDS

python -m build --wheel --outdir "$work/dist" "$repo" >"$work/build.log" \
    || { cat "$work/build.log"; exit 1; }
python -m twine check --strict "$work"/dist/*.whl
wheel="$(ls "$work"/dist/rl_mind-*.whl)"

python -m venv "$work/venv"
venv_python="$work/venv/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1
# The CPU build of torch first (see .ci/run), then the wheel and what runs a notebook.
"$venv_python" -m pip install --quiet "torch==2.13.0"
"$venv_python" -m pip install --quiet "$wheel" nbclient nbformat ipykernel

cd "$work"
"$venv_python" - "$repo/notebooks/solutions/dqn.ipynb" <<'PY'
import sys
from pathlib import Path

import nbclient
import nbformat

import rl_mind

assert "site-packages" in rl_mind.__file__, f"the source tree was imported: {rl_mind.__file__}"
notebook = nbformat.read(sys.argv[1], as_version=4)
nbclient.NotebookClient(notebook, timeout=900, resources={"metadata": {"path": str(Path.cwd())}}).execute()
print(f"{Path(sys.argv[1]).name}: ran from the installed wheel ({rl_mind.__file__})")
PY
RL_MIND_FAST_TEST=1 "$work/venv/bin/rl-mind" selfplay --minutes 0.1 --run-dir "$work/selfplay"
echo "wheel test passed in $((SECONDS - started)) s"
