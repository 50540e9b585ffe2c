"""``python -m rl_mind.checks notebooks/src/*.py``: regenerate the checks' data from the
reference solutions in the practical sources (a developer command)."""

import sys

from rl_mind.checks import regenerate

if len(sys.argv) < 2:
    print("usage: python -m rl_mind.checks notebooks/src/*.py", file=sys.stderr)
    sys.exit(2)
for path in regenerate(sys.argv[1:]):
    print(f"wrote {path}")
