"""CartPole with a continuous force: the classic control task for DDPG, TD3 and SAC.

Gymnasium's ``CartPole-v1`` pushes the cart with a force of exactly ``±force_mag``; here the
action is a float in ``[-1, 1]`` (``Box(-1, 1, (1,))``) scaled to ``force_mag`` (10 N), so
that 0 means "no push". Everything else (physics, observation, termination when the pole
falls or the cart leaves the track, reward +1 a step, ``rgb_array`` rendering) is
gymnasium's. Registered as ``CartPoleContinuous-v1`` with a 500-step time limit (a
*truncation*), on ``import rl_mind.envs``.

Actions outside ``[-1, 1]`` are clipped (as a real motor saturates), non-finite actions are
a ``ValueError``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

__all__ = ["CartPoleContinuousEnv"]


class CartPoleContinuousEnv(CartPoleEnv):
    """CartPole whose action is a continuous force ``a ∈ [-1, 1]`` (``force = a · force_mag``).

    Observation ``[4]`` float32 (cart position, cart velocity, pole angle, pole angular
    velocity), reward 1.0 per step, terminated when the pole falls beyond 12° or the cart
    leaves ``[-2.4, 2.4]``. The 500-step limit is added by the registration.
    """

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__(render_mode=render_mode)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = np.asarray(action, dtype=np.float64).reshape(-1)
        if a.shape != (1,):
            raise ValueError(
                f"CartPoleContinuous: expected an action of shape (1,) (a force in [-1, 1]), "
                f"got shape {np.shape(action)}"
            )
        if not np.isfinite(a[0]):
            raise ValueError(f"CartPoleContinuous: the action must be finite, got {a[0]}")
        if self.state is None:
            raise RuntimeError("CartPoleContinuous: call reset() before step()")
        force = float(np.clip(a[0], -1.0, 1.0)) * self.force_mag
        x, x_dot, theta, theta_dot = self.state
        cos_theta, sin_theta = np.cos(theta), np.sin(theta)
        # Same equations (and Euler integration) as gymnasium's CartPoleEnv.step.
        temp = (force + self.polemass_length * theta_dot**2 * sin_theta) / self.total_mass
        theta_acc = (self.gravity * sin_theta - cos_theta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * cos_theta**2 / self.total_mass)
        )
        x_acc = temp - self.polemass_length * theta_acc * cos_theta / self.total_mass
        x = x + self.tau * x_dot
        x_dot = x_dot + self.tau * x_acc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * theta_acc
        self.state = np.array((x, x_dot, theta, theta_dot), dtype=np.float64)
        terminated = bool(
            x < -self.x_threshold
            or x > self.x_threshold
            or theta < -self.theta_threshold_radians
            or theta > self.theta_threshold_radians
        )
        if not terminated:
            reward = 1.0
        elif self.steps_beyond_terminated is None:
            # gymnasium annotates this counter as None only; it is an int after the fall.
            self.steps_beyond_terminated = 0  # type: ignore[assignment]
            reward = 1.0
        else:
            self.steps_beyond_terminated += 1
            reward = 0.0
        if self.render_mode == "human":
            self.render()
        return np.array(self.state, dtype=np.float32), reward, terminated, False, {}
