"""rl-mind: typed reinforcement-learning building blocks for teaching.

Importing the package registers no environment (``import rl_mind.envs`` does), starts
nothing, and imports neither tensorboard nor moviepy (they are imported where used).
"""

from rl_mind.core import (
    Action,
    ActionT,
    Actor,
    Observation,
    StochasticAction,
    TensorStruct,
    unbatched,
)

__version__ = "0.5.0"

__all__ = [
    "Action",
    "ActionT",
    "Actor",
    "Observation",
    "StochasticAction",
    "TensorStruct",
    "unbatched",
]
