"""rl-mind: typed reinforcement-learning building blocks for teaching.

Importing the package registers no environment (``import rl_mind.envs`` does), starts
nothing, and imports neither tensorboard nor moviepy (they are imported where used).
"""

# --- core package (core, env, data, collectors, nn)
from rl_mind.collectors import EpisodeCollector, RolloutCollector, TransitionCollector
from rl_mind.core import (
    Action,
    ActionT,
    Actor,
    Observation,
    StochasticAction,
    TensorStruct,
    unbatched,
)
from rl_mind.data import Episode, ReplayBuffer, Rollout, Transitions, minibatches
from rl_mind.env import EnvStep, VecEnv
from rl_mind.nn import build_mlp, soft_update

# --- evaluation and notebook helpers

# --- practicals (checks)

# --- self-play

__version__ = "0.5.0"

__all__ = [
    # core package
    "Action",
    "ActionT",
    "Actor",
    "EnvStep",
    "Episode",
    "EpisodeCollector",
    "Observation",
    "ReplayBuffer",
    "Rollout",
    "RolloutCollector",
    "StochasticAction",
    "TensorStruct",
    "TransitionCollector",
    "Transitions",
    "VecEnv",
    "build_mlp",
    "minibatches",
    "soft_update",
    "unbatched",
    # evaluation and notebook helpers
    # practicals (checks)
    # self-play
]
