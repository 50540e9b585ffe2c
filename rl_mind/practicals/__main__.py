"""``python -m rl_mind.practicals``: the same as ``rl-mind practical``."""

import sys

from rl_mind.practicals.cli import main

sys.exit(main())
