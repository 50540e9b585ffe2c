"""The class arena: students submit their Pong Duel agents as data, the teacher rates them.

- :func:`export_agent` (also ``rl_mind.export_agent``) writes a student's policy as one
  ``.safetensors`` file: weights and a JSON description of the network, never code.
- ``rl-mind arena SUBMISSIONS_DIR --out DIR`` (:mod:`rl_mind.arena.run`) loads every
  submission (refusing bad files with a reason each), plays a round robin with the bots as
  anchors (:mod:`rl_mind.arena.tournament`: every match of every pair stepped at once),
  fits Bradley–Terry ratings and writes ``leaderboard.html``, ``leaderboard.csv``,
  ``gradebook.csv`` (the teacher's :class:`Rubric`) and ``rejected.csv``.
- ``rl-mind play AGENT`` (:mod:`rl_mind.arena.play`): a person plays against an agent.

Importing this package imports neither the game (no environment is registered) nor
safetensors, pygame or matplotlib: each is imported where it is used.
"""

from rl_mind.arena.rubric import DEFAULT_RUBRIC, Rubric
from rl_mind.arena.submission import (
    ACTIVATIONS,
    AgentDescription,
    ArenaAgent,
    SubmissionError,
    export_agent,
    load_agent,
    load_reference,
    load_submission,
)

__all__ = [
    "ACTIVATIONS",
    "DEFAULT_RUBRIC",
    "AgentDescription",
    "ArenaAgent",
    "Rubric",
    "SubmissionError",
    "export_agent",
    "load_agent",
    "load_reference",
    "load_submission",
]
