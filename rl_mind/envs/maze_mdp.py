"""MazeMDP-v0: a grid maze whose whole model is known, for dynamic programming and tabular RL.

The course's first weeks need an MDP small enough to hold in arrays: each free cell of a
``width x height`` grid is a state, four actions move north, south, east or west (into a
wall or off the grid: the agent stays where it is), and the model is exposed as

- ``P`` ``[S, A, S]``: ``P[s, a, s']`` the probability of reaching ``s'`` by ``a`` from ``s``;
- ``r`` ``[S, A]``: the reward of taking ``a`` in ``s``;
- ``gamma``: the discount factor (0.9);
- ``terminal_states``: the goal cells.

What the reader must not get wrong: as in rl-mind 0.4 (which wrapped the ``mazemdp``
package, and whose numbers this maze reproduces), the episode ends with the action taken
**in** a terminal state: that action earns ``r[goal, a]`` (1.0) and returns
``terminated=True``. Arriving at the goal earns nothing yet. A terminal state has no future,
so its value is ``max_a r[goal, a]`` with no bootstrap: a Bellman backup must not look past
it. The registration adds a 200-step time limit, a *truncation* (bootstrap from
``next_obs`` there). ``P`` keeps the ordinary moves in the rows of terminal states, so that
every row is a distribution; the Bellman backups ignore them.

States are numbered column by column (the cell at column ``x``, row ``y`` is grid cell
``x * height + y``; walls are given as grid cells, states skip them), as in 0.4, so a
0.4 maze given by its ``walls`` is the same maze here, and a random maze drawn with the same
``seed`` and ``ratio`` is too. Observations are state indices (``Discrete(S)``): through
:class:`~rl_mind.env.VecEnv` they come back as ``long`` tensors, so that ``q[obs]`` picks
rows of a ``[S, A]`` table.

The pictures (:func:`plot_maze`, :func:`plot_sweeps`, the 0.4 methods ``draw_v``,
``draw_pi``, ``draw_v_pi``) are matplotlib figures, inline in a notebook; ``render()``
(``render_mode="rgb_array"``) draws a frame with numpy, for
:func:`~rl_mind.evaluation.record_video`.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["ACTION_NAMES", "MazeMDPEnv", "plot_maze", "plot_sweeps"]

#: The four actions, by index: 0 north (up), 1 south (down), 2 east (right), 3 west (left).
ACTION_NAMES = ("north", "south", "east", "west")
_MOVES = ((0, -1), (0, 1), (1, 0), (-1, 0))  # (dx, dy) of each action; y grows downward
_HIT_REWARD = -0.5  # 0.4's reward for bumping into a wall with hit=True
_CELL = 32  # pixels per cell in render() frames


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"MazeMDP: {what} must be an int, got {value!r}")
    return int(value)


def _int_list(values: Any, what: str, high: int) -> list[int]:
    if isinstance(values, str | bytes) or not isinstance(values, Sequence | np.ndarray):
        raise TypeError(f"MazeMDP: {what} must be a list of ints, got {values!r}")
    result = [_as_int(v, f"each of {what}") for v in values]
    if bad := [v for v in result if not 0 <= v < high]:
        raise ValueError(f"MazeMDP: {what} must lie in [0, {high}), got {bad}")
    if len(set(result)) != len(result):
        raise ValueError(f"MazeMDP: {what} has duplicates: {result}")
    return result


class MazeMDPEnv(gym.Env[np.int64, np.int64]):
    """A grid maze MDP with its model exposed (``P``, ``r``, ``gamma``, ``terminal_states``).

    Either a random maze (``ratio`` of the cells are walls, drawn from ``seed``; redrawn
    until the goal can be reached from every state; the goal is the last state) or an
    explicit one (``walls``, grid cells; ``terminal_states``, states, default the last one).
    Episodes start in a state drawn uniformly from ``start_states`` (default: every
    non-terminal state). ``hit``: the reward of bumping into a wall or the border (``True``
    means -0.5, as in 0.4; ``False`` 0). ``kwargs``: rl-mind 0.4's spelling, all of these
    in one dict (``gym.make("MazeMDP-v0", kwargs={"width": 5, "height": 5, "ratio": 0.2,
    "seed": 0})``).

    The same arguments always give the same maze (``seed`` is the maze's, not the
    episodes'; ``reset(seed=...)`` seeds the start states), so that every copy of a
    :class:`~rl_mind.env.VecEnv` holds the same maze.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(
        self,
        width: int = 10,
        height: int = 10,
        ratio: float | None = None,
        seed: int | None = 0,
        walls: Sequence[int] | None = None,
        terminal_states: Sequence[int] | None = None,
        start_states: Sequence[int] | None = None,
        hit: bool | float = False,
        gamma: float = 0.9,
        render_mode: str | None = None,
        kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if kwargs is not None:  # 0.4's spelling: everything in one dict
            if not isinstance(kwargs, Mapping):
                raise TypeError(f"MazeMDP: kwargs must be a dict, got {kwargs!r}")
            known = {"width", "height", "ratio", "seed", "walls", "terminal_states",
                     "start_states", "hit", "gamma"}  # fmt: skip
            if unknown := sorted(set(kwargs) - known):
                raise TypeError(
                    f"MazeMDP: unknown maze arguments {unknown}; known: {sorted(known)}"
                )
            settings: dict[str, Any] = {"width": width, "height": height, "ratio": ratio,
                                        "seed": seed, "walls": walls, "hit": hit, "gamma": gamma,
                                        "terminal_states": terminal_states,
                                        "start_states": start_states, **kwargs}  # fmt: skip
            width, height, ratio, seed = (settings[k] for k in ("width", "height", "ratio", "seed"))
            walls, terminal_states = settings["walls"], settings["terminal_states"]
            start_states, hit, gamma = settings["start_states"], settings["hit"], settings["gamma"]
        self.width = _as_int(width, "width")
        self.height = _as_int(height, "height")
        if self.width < 1 or self.height < 1 or self.width * self.height < 2:
            raise ValueError(f"MazeMDP: the grid needs at least 2 cells, got {width}x{height}")
        if walls is not None and ratio is not None:
            raise ValueError(
                "MazeMDP: give either walls (an explicit maze) or ratio (a random one)"
            )
        if isinstance(hit, bool) or isinstance(hit, int | float) and np.isfinite(hit):
            self.hit_reward = _HIT_REWARD if hit is True else float(hit)
        else:
            raise TypeError(f"MazeMDP: hit must be a bool or a finite number, got {hit!r}")
        if isinstance(gamma, bool) or not isinstance(gamma, int | float) or not 0 < gamma <= 1:
            raise ValueError(f"MazeMDP: gamma must be a number in (0, 1], got {gamma!r}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(
                f"MazeMDP: render_mode must be None or 'rgb_array', got {render_mode!r}"
            )
        self.render_mode = render_mode
        #: The discount factor of the MDP.
        self.gamma = float(gamma)
        size = self.width * self.height
        if walls is not None:
            self._build(_int_list(walls, "walls", size), terminal_states)
            if not self._navigable():
                raise ValueError("MazeMDP: the goal cannot be reached from every state")
        else:
            self._random_maze(ratio, seed, terminal_states)
        n = self.nb_states
        starts = (
            [s for s in range(n) if s not in self.terminal_states]
            if start_states is None
            else _int_list(start_states, "start_states", n)
        )
        if not starts:
            raise ValueError("MazeMDP: no start state (every state is terminal)")
        #: The states an episode may start in (uniformly).
        self.start_states = starts
        self.observation_space = spaces.Discrete(n)
        self.action_space = spaces.Discrete(len(_MOVES))
        self.title = f"Maze {self.width}x{self.height}"
        #: The current state; reading it is cheating for a learning agent.
        self.state: int | None = None

    # ------------------------------------------------------------------ the model
    def _random_maze(self, ratio: Any, seed: Any, terminal_states: Any) -> None:
        """Random walls, drawn as 0.4 drew them, so that a seed gives 0.4's maze."""
        size = self.width * self.height
        ratio = 0.2 if ratio is None else ratio
        if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 <= ratio < 1:
            raise ValueError(f"MazeMDP: ratio must be a number in [0, 1), got {ratio!r}")
        if terminal_states is not None:
            raise ValueError("MazeMDP: terminal_states needs explicit walls (a random "
                             "maze's goal is its last state)")  # fmt: skip
        if seed is not None:
            seed = _as_int(seed, "seed")
        rng = random.Random(seed)  # (Python's random.sample, as 0.4)
        n_walls = round(ratio * size)
        if n_walls > size - 2:
            raise ValueError(f"MazeMDP: ratio {ratio} leaves fewer than 2 free cells")
        while True:
            self._build(rng.sample(range(size), n_walls), None)
            if self._navigable():
                break

    def _build(self, walls: list[int], terminal_states: Sequence[int] | None) -> None:
        self.walls = sorted(walls)
        wall = set(walls)
        # state of each cell [height, width], -1 on walls; states numbered column by column
        grid = np.full((self.height, self.width), -1, dtype=np.int64)
        cells: list[tuple[int, int]] = []
        for x in range(self.width):
            for y in range(self.height):
                if x * self.height + y not in wall:
                    grid[y, x] = len(cells)
                    cells.append((y, x))
        if len(cells) < 2:
            raise ValueError(f"MazeMDP: the maze needs at least 2 free cells, got {len(cells)}")
        #: ``[height, width]``: the state of each grid cell (row, column), -1 on walls.
        self.state_grid = grid
        #: ``[S, 2]``: the (row, column) of each state.
        self.cells = np.array(cells, dtype=np.int64)
        n = self.nb_states = len(cells)
        self.terminal_states = (
            [n - 1] if terminal_states is None
            else _int_list(terminal_states, "terminal_states", n)
        )  # fmt: skip
        P = np.zeros((n, len(_MOVES), n))
        r = np.zeros((n, len(_MOVES)))
        for s, (y, x) in enumerate(cells):
            for a, (dx, dy) in enumerate(_MOVES):
                nx, ny = x + dx, y + dy
                inside = 0 <= nx < self.width and 0 <= ny < self.height
                target = int(grid[ny, nx]) if inside else -1
                if target < 0:  # a wall or the border: stay
                    P[s, a, s] = 1.0
                    r[s, a] = self.hit_reward
                else:
                    P[s, a, target] = 1.0
        r[self.terminal_states] = 1.0
        #: ``[S, A, S]``: ``P[s, a, s']``, the probability of reaching ``s'`` by ``a`` from ``s``.
        self.P = P
        self._cumulative = P.cumsum(axis=2)
        #: ``[S, A]``: the reward of taking action ``a`` in state ``s``.
        self.r = r

    def _navigable(self) -> bool:
        """Whether a terminal state can be reached from every state (a search backwards)."""
        reached = set(self.terminal_states)
        frontier = deque(self.terminal_states)
        predecessors = [np.nonzero(self.P[:, :, s].any(axis=1))[0] for s in range(self.nb_states)]
        while frontier:
            for s in predecessors[frontier.popleft()]:
                if int(s) not in reached:
                    reached.add(int(s))
                    frontier.append(int(s))
        return len(reached) == self.nb_states

    @property
    def nb_actions(self) -> int:
        """The number of actions (4)."""
        return len(_MOVES)

    @property
    def mdp(self) -> MazeMDPEnv:
        """The model (0.4 kept it in a separate object): this environment itself."""
        return self

    @property
    def coord_x(self) -> np.ndarray:
        """``[S]``: the grid column of each state (0.4's name)."""
        return self.cells[:, 1]

    @property
    def coord_y(self) -> np.ndarray:
        """``[S]``: the grid row of each state (0.4's name)."""
        return self.cells[:, 0]

    # ------------------------------------------------------------------ gymnasium
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.int64, dict[str, Any]]:
        """Start an episode in a start state drawn uniformly (``options={"uniform": True}``:
        in any state, as in 0.4)."""
        super().reset(seed=seed)
        states = range(self.nb_states) if (options or {}).get("uniform") else self.start_states
        self.state = int(states[int(self.np_random.integers(len(states)))])
        return np.int64(self.state), {}

    def step(self, action: Any) -> tuple[np.int64, float, bool, bool, dict[str, Any]]:
        """Move; ``terminated`` when the action was taken in a terminal state."""
        if self.state is None:
            raise RuntimeError("MazeMDP: call reset() before step()")
        if not self.action_space.contains(action):
            raise ValueError(f"MazeMDP: expected an action in {{0, 1, 2, 3}}, got {action!r}")
        s, a = self.state, int(action)
        reward = float(self.r[s, a])
        terminated = s in self.terminal_states
        # (a sample of P[s, a]: the first state whose cumulative probability exceeds u)
        u = self.np_random.random()
        self.state = min(
            int(np.searchsorted(self._cumulative[s, a], u, side="right")), self.nb_states - 1
        )
        return np.int64(self.state), reward, terminated, False, {}

    def render(self) -> np.ndarray | None:  # type: ignore[override]
        """An ``[H, W, 3]`` uint8 frame of the maze and the agent (``render_mode="rgb_array"``)."""
        if self.render_mode != "rgb_array":
            return None
        c = _CELL
        frame = np.full((self.height * c, self.width * c, 3), 255, dtype=np.uint8)
        frame[np.repeat(np.repeat(self.state_grid < 0, c, 0), c, 1)] = (60, 60, 70)
        for s in self.terminal_states:
            y, x = self.cells[s]
            frame[y * c + 2 : (y + 1) * c - 2, x * c + 2 : (x + 1) * c - 2] = (250, 200, 40)
        frame[::c] = frame[:, ::c] = (190, 190, 190)  # grid lines
        if self.state is not None:
            y, x = self.cells[self.state]
            yy, xx = np.mgrid[0:c, 0:c]
            disk = (yy - c / 2 + 0.5) ** 2 + (xx - c / 2 + 0.5) ** 2 <= (c * 0.32) ** 2
            frame[y * c : (y + 1) * c, x * c : (x + 1) * c][disk] = (30, 110, 220)
        return frame

    # ------------------------------------------------------------------ 0.4's drawings
    def draw_v(self, v: Any, title: str | None = None, recorder: Any = None) -> None:
        """Draw a value function ``[S]`` (or the max of Q-values ``[S, A]``) on the grid."""
        _no_recorder(recorder)
        plot_maze(self, values=v, title=title or self.title)

    def draw_pi(self, policy: Any, title: str | None = None, recorder: Any = None) -> None:
        """Draw a policy (``[S]`` actions, or ``[S, A]`` of which the argmax) as arrows."""
        _no_recorder(recorder)
        plot_maze(self, policy=policy, title=title or self.title)

    def draw_v_pi(
        self, v: Any, policy: Any, title: str | None = None, recorder: Any = None
    ) -> None:
        """Draw a value function and a policy on one figure."""
        _no_recorder(recorder)
        plot_maze(self, values=v, policy=policy, title=title or self.title)

    def draw_v_pi_a(
        self, v: Any, policy: Any, agent_pos: int, title: str | None = None, recorder: Any = None
    ) -> None:
        """Draw a value function, a policy and the agent (in state ``agent_pos``) on one figure."""
        _no_recorder(recorder)
        plot_maze(self, values=v, policy=policy, agent=agent_pos, title=title or self.title)

    def set_title(self, title: str) -> None:
        """The title of the ``draw_*`` figures."""
        self.title = title

    def __getattr__(self, name: str) -> Any:
        # (only reached for names the maze lacks: rl-mind 0.4's retired methods say what to use)
        if name in _RETIRED_04:
            raise AttributeError(f"MazeMDPEnv.{name} (rl-mind 0.4) is gone: {_RETIRED_04[name]}")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


_DRAW = "draw with rl_mind.envs.plot_maze(env, values=..., policy=..., agent=...)"
_RETIRED_04 = {
    "set_render_func": _DRAW,
    "render_mdp": _DRAW,
    "init_draw": _DRAW,
    "set_no_agent": "plot_maze draws the agent only when given agent=state",
    "set_timeout": 'set the step limit when making it: gymnasium.make("MazeMDP-v0", '
    "max_episode_steps=N)",
    "sample_transition": "sample from the model: next state ~ env.P[s, a] (a distribution over "
    "states), reward env.r[s, a]",
    "seed": "seed with env.reset(seed=...)",
}


def _no_recorder(recorder: Any) -> None:
    if recorder is not None:
        raise TypeError(
            "MazeMDP: draw_*(recorder=...) is gone; film an agent with rl_mind.record_video, "
            "and show value iteration sweep by sweep with rl_mind.envs.plot_sweeps"
        )


# ---------------------------------------------------------------------- pictures
def _numpy(values: Any, what: str) -> np.ndarray:
    if hasattr(values, "detach"):  # a torch tensor
        values = values.detach().cpu().numpy()
    array = np.asarray(values)
    if array.dtype == object or not np.issubdtype(array.dtype, np.number):
        raise TypeError(f"plot_maze: {what} must be numbers, got {values!r}")
    return array


def _maze(maze: Any) -> MazeMDPEnv:
    inner = getattr(maze, "unwrapped", maze)
    if not isinstance(inner, MazeMDPEnv):
        raise TypeError(f"expected a MazeMDP environment, got {type(maze).__name__}")
    return inner


def _actions(policy: Any, n: int) -> np.ndarray:
    """``[S]`` actions, or the argmax of ``[S, A]`` probabilities or Q-values, checked."""
    pi = _numpy(policy, "policy")
    if pi.ndim == 2 and pi.shape[0] == n:
        pi = pi.argmax(axis=1)
    if pi.shape != (n,) or not np.issubdtype(pi.dtype, np.integer):
        raise ValueError(
            f"plot_maze: policy must be [{n}] actions or [{n}, A], got {list(pi.shape)} "
            f"of {pi.dtype}"
        )
    if bad := sorted({int(a) for a in pi if not 0 <= a < len(_MOVES)}):
        raise ValueError(f"plot_maze: actions must be in 0..3, got {bad}")
    return pi


def plot_maze(
    maze: Any,
    values: Any = None,
    policy: Any = None,
    *,
    agent: int | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    vmin: float | None = None,
    vmax: float | None = None,
    colorbar: bool = True,
) -> Axes:
    """Draw the maze, a value function as a heat map and a policy as arrows, on one figure.

    ``maze``: a :class:`MazeMDPEnv` (or a ``gym.make`` of it). ``values``: ``[S]`` (or
    ``[S, A]`` Q-values, drawn as their max), numpy or torch, written in the cells of
    small mazes. ``policy``: ``[S]`` actions, or ``[S, A]`` (probabilities or Q-values),
    one arrow per state toward its (argmax) action; none on terminal states, which end the
    episode whatever the action. Walls are dark, terminal states outlined in red,
    ``agent`` (a state) a blue dot. Returns the ``Axes`` (a new figure unless ``ax``).
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle, Rectangle

    env = _maze(maze)
    n = env.nb_states
    if ax is None:
        _, ax = plt.subplots(figsize=(0.55 * env.width + 1.6, 0.55 * env.height + 0.6))
    grid = np.full(env.state_grid.shape, np.nan)
    if values is not None:
        v = _numpy(values, "values").astype(np.float64)
        if v.ndim == 2 and v.shape[0] == n:
            v = v.max(axis=1)
        if v.shape != (n,):
            raise ValueError(f"plot_maze: values must be [{n}] or [{n}, A], got {list(v.shape)}")
        grid[env.cells[:, 0], env.cells[:, 1]] = v
        cmap = plt.get_cmap("viridis").with_extremes(bad=(0.08, 0.08, 0.1))  # walls
        image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=vmin, vmax=vmax)
        if colorbar:
            ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
        if env.width <= 12 and env.height <= 12:
            low, high = image.get_clim()
            for s, (y, x) in enumerate(env.cells):
                bright = (v[s] - low) / (high - low) > 0.6 if high > low else False
                ax.text(x, y + 0.3, f"{v[s]:.2f}", ha="center", va="center", fontsize=6,
                        color="black" if bright else "white")  # fmt: skip
    else:
        free = np.where(env.state_grid >= 0, 1.0, 0.0)
        ax.imshow(free, cmap="gray", vmin=-0.3, vmax=1.0)
    if policy is not None:
        pi = _actions(policy, n)
        moving = [s for s in range(n) if s not in env.terminal_states]
        dx = np.array([_MOVES[pi[s]][0] for s in moving], dtype=float)
        dy = np.array([_MOVES[pi[s]][1] for s in moving], dtype=float)
        lift = 0.12 if values is not None else 0.0  # (above the value written in the cell)
        ax.quiver(env.cells[moving, 1], env.cells[moving, 0] - lift, dx, dy, pivot="mid",
                  color="white" if values is not None else "black", scale=2.2,
                  scale_units="xy", angles="xy", width=0.006, headwidth=4, headlength=4,
                  headaxislength=3.5)  # fmt: skip
    for s in env.terminal_states:
        y, x = env.cells[s]
        ax.add_patch(Rectangle((x - 0.42, y - 0.42), 0.84, 0.84, fill=False, ec="red", lw=2))
        if values is None:
            ax.text(x, y, "goal", ha="center", va="center", fontsize=7, color="red")
    if agent is not None:
        y, x = env.cells[_as_int(agent, "agent")]
        ax.add_patch(Circle((x, y), 0.3, color="dodgerblue"))
    ax.set_xticks(np.arange(-0.5, env.width, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, env.height, 1), minor=True)
    ax.grid(which="minor", color=(0.75, 0.75, 0.75), linewidth=0.5)
    ax.tick_params(which="both", length=0, labelbottom=False, labelleft=False)
    ax.set_xlim(-0.5, env.width - 0.5)
    ax.set_ylim(env.height - 0.5, -0.5)
    if title is not None:
        ax.set_title(title)
    return ax


def plot_sweeps(
    maze: Any,
    values: Sequence[Any],
    policies: Sequence[Any] | None = None,
    *,
    titles: Sequence[str] | None = None,
) -> Figure:
    """A row of panels, one per value function in ``values`` (e.g. value iteration after
    1, 2, 4, 8... sweeps), on one colour scale; with ``policies``, the arrows too. Returns
    the ``Figure``."""
    import matplotlib.pyplot as plt

    arrays = [_numpy(v, "values").astype(np.float64) for v in values]
    if not arrays:
        raise ValueError("plot_sweeps: give at least one value function")
    if policies is not None and len(policies) != len(arrays):
        raise ValueError(f"plot_sweeps: {len(arrays)} value functions but {len(policies)} policies")
    if titles is not None and len(titles) != len(arrays):
        raise ValueError(f"plot_sweeps: {len(arrays)} value functions but {len(titles)} titles")
    env = _maze(maze)
    low = min(float(np.min(v)) for v in arrays)
    high = max(float(np.max(v)) for v in arrays)
    fig, axes = plt.subplots(
        1, len(arrays), figsize=(len(arrays) * (0.3 * env.width + 0.4), 0.3 * env.height + 0.8),
        squeeze=False,
    )  # fmt: skip
    for i, (ax, v) in enumerate(zip(axes[0], arrays)):
        plot_maze(env, v, None if policies is None else policies[i], ax=ax, vmin=low, vmax=high,
                  title=None if titles is None else titles[i], colorbar=False)  # fmt: skip
        for text in list(ax.texts):  # (too small to read in a row of panels)
            text.remove()
    fig.tight_layout()
    return fig
