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
from rl_mind.checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from rl_mind.evaluation import Evaluator
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
from rl_mind.records import EvalResult, read_evaluations
from rl_mind.rendering import FrameViewer
from rl_mind.videos import actor_policy, record_video, write_video

# --- practicals (checks)
# isort: split
from rl_mind.checks import (
    check_a2c_loss,
    check_discounted_returns,
    check_dqn_loss,
    check_dqn_td_target,
    check_epsilon_greedy,
    check_gae,
    check_greedy_policy,
    check_nstep_returns,
    check_policy_evaluation,
    check_ppo_policy_loss,
    check_ppo_value_loss,
    check_q_from_v,
    check_q_learning_target,
    check_reinforce_loss,
    check_sac_actor_loss,
    check_sac_target,
    check_sac_temperature_loss,
    check_sarsa_target,
    check_td3_actor_loss,
    check_td3_target,
    check_td_update,
    check_update_targets,
    check_value_iteration,
)

# --- self-play
from rl_mind.selfplay import (
    EloTable,
    Leaderboard,
    LeaderboardRow,
    MatchStats,
    OpponentPool,
    RoundRobinResults,
    Snapshot,
    TwoPlayerGame,
    bradley_terry,
    elo_expected_score,
    play_matches,
    round_robin,
)

# --- the class arena (submissions as data)
# isort: split
from rl_mind.arena.submission import export_agent

__version__ = "0.5.0"

# rl-mind 0.4's rendering names, kept in rl_mind.rendering (they warn when used), but for
# HistoryEntry (a type, importable from rl_mind.rendering only); not in __all__, so that
# `from rl_mind import *` and the reference show today's API only.
from rl_mind.rendering import _frames_04

_RENDERING_04 = frozenset(_frames_04.__all__) - {"HistoryEntry"}


def __getattr__(name: str) -> object:
    if name in _RENDERING_04:
        return getattr(_frames_04, name)
    raise AttributeError(f"module 'rl_mind' has no attribute {name!r}")


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
    "read_evaluations",
    "record_video",
    "run_directory",
    "save_checkpoint",
    "setup_tensorboard",
    "video_display",
    "write_video",
    # practicals (checks)
    "check_a2c_loss",
    "check_discounted_returns",
    "check_dqn_loss",
    "check_dqn_td_target",
    "check_epsilon_greedy",
    "check_gae",
    "check_greedy_policy",
    "check_nstep_returns",
    "check_policy_evaluation",
    "check_ppo_policy_loss",
    "check_ppo_value_loss",
    "check_q_from_v",
    "check_q_learning_target",
    "check_reinforce_loss",
    "check_sac_actor_loss",
    "check_sac_target",
    "check_sac_temperature_loss",
    "check_sarsa_target",
    "check_td3_actor_loss",
    "check_td3_target",
    "check_td_update",
    "check_update_targets",
    "check_value_iteration",
    # self-play
    "EloTable",
    "Leaderboard",
    "LeaderboardRow",
    "MatchStats",
    "OpponentPool",
    "RoundRobinResults",
    "Snapshot",
    "TwoPlayerGame",
    "bradley_terry",
    "elo_expected_score",
    "play_matches",
    "round_robin",
    # the class arena
    "export_agent",
]
