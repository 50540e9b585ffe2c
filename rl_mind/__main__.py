"""The ``rl-mind`` command (also ``python -m rl_mind``): one sub-command per job.

Each sub-command lives in its own module and is imported only when it is run, so that
``rl-mind --help`` stays instant.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

# sub-command -> (module with a ``main(argv) -> int`` function, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "selfplay": ("rl_mind.selfplay.job", "train PPO on Pong Duel by self-play (the main job)"),
    "practical": ("rl_mind.practicals", "generate student and solution notebooks from a source"),
    "arena": ("rl_mind.arena.run", "rate a class's Pong Duel submissions: leaderboard, gradebook"),
    "play": ("rl_mind.arena.play", "play Pong Duel with the keyboard against an agent"),
    "study": ("rl_mind.study.cli", "run, resume or summarise a study (variants x seeds)"),
    "compare": ("rl_mind.study.compare", "plot runs or studies with confidence intervals"),
}


def usage() -> str:
    lines = ["usage: rl-mind COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:<10} {help_}" for name, (_module, help_) in COMMANDS.items()]
    lines += ["", "Run `rl-mind COMMAND --help` for the options of a command."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help"}:
        print(usage())
        return 0
    command, rest = args[0], args[1:]
    if command not in COMMANDS:
        print(f"rl-mind: unknown command {command!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[command][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
