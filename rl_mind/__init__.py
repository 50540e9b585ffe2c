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
# isort: split
from rl_mind.evaluation import (
    CheckpointError,
    EvalResult,
    Evaluator,
    actor_policy,
    load_checkpoint,
    record_video,
    save_checkpoint,
    write_video,
)
from rl_mind.notebook import (
    Profile,
    ProgressBar,
    is_notebook,
    outputs_directory,
    progress_bar,
    run_directory,
    setup_tensorboard,
    video_display,
)
from rl_mind.rendering import FrameViewer

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
    "CheckpointError",
    "EvalResult",
    "Evaluator",
    "FrameViewer",
    "Profile",
    "ProgressBar",
    "actor_policy",
    "is_notebook",
    "load_checkpoint",
    "outputs_directory",
    "progress_bar",
    "record_video",
    "run_directory",
    "save_checkpoint",
    "setup_tensorboard",
    "video_display",
    "write_video",
    # practicals (checks)
    # self-play
]
