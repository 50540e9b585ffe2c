"""rl-mind: typed reinforcement-learning building blocks for teaching.

Importing the package registers no environment (``import rl_mind.envs`` does), starts
nothing, and imports neither tensorboard nor moviepy (they are imported where used).
"""

# --- core package (core, env, data, collectors, nn)
from rl_mind.core import (
    Action,
    ActionT,
    Actor,
    Observation,
    StochasticAction,
    TensorStruct,
    unbatched,
)

# --- evaluation and notebook helpers

# --- practicals (checks)

# --- self-play

__version__ = "0.5.0"

__all__ = [
    # core package
    "Action",
    "ActionT",
    "Actor",
    "Observation",
    "StochasticAction",
    "TensorStruct",
    "unbatched",
    # evaluation and notebook helpers
    # practicals (checks)
    # self-play
]
