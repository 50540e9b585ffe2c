"""rl-mind 0.4's spelling of the maze: ``import rl_mind.mazemdp_env`` registers ``MazeMDP-v0``.

The maze now lives in :mod:`rl_mind.envs.maze_mdp` and is registered by ``import
rl_mind.envs`` (which this module does); ``gym.make("MazeMDP-v0", kwargs={"width": 5,
"height": 5, "ratio": 0.2, "seed": 0})`` works as in 0.4.
"""

from rl_mind.envs import MazeMDPEnv

__all__ = ["MazeMDPEnv"]
