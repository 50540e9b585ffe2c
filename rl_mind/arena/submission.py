"""Pong Duel agents as data: exporting a student's policy, and loading it back safely.

A **submission** is one ``.safetensors`` file written by :func:`export_agent`: the weights of
the policy's MLP, and in the file's metadata a small JSON description of the network
(hidden sizes, activation, whether it reads the ball forecast, name, author, the package
version) that the arena rebuilds (:class:`ArenaAgent`). A teacher can also assemble one by
hand: a ``.json`` description whose ``"weights"`` names a ``.safetensors`` file in the same
folder.

What the reader must not get wrong:

- Loading never runs code from the file: safetensors holds tensors and a JSON header, no
  pickle. Nothing else is opened (a ``.pt`` or ``.pkl`` file is refused unread), and a
  description may not point outside its own folder.
- Every check that can fail does so with a :class:`SubmissionError` whose message is one
  line (the arena writes it into ``rejected.csv``): not a submission, corrupt or truncated,
  an unknown format, shapes that disagree with the description, weights that are not
  finite.
- What the description cannot express cannot be submitted: :func:`export_agent` plays the
  rebuilt network against the student's own ``act`` on test observations and refuses to
  write a file that would play differently.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from rl_mind.core import Action, Actor, Observation
from rl_mind.nn import build_mlp

__all__ = [
    "ACTIVATIONS",
    "FORMAT",
    "AgentDescription",
    "ArenaAgent",
    "SubmissionError",
    "export_agent",
    "load_agent",
    "load_reference",
    "load_submission",
]

FORMAT = "rl-mind agent 1"
METADATA_KEY = "rl_mind_agent"  # the safetensors metadata entry holding the description

#: The activations a description may name, and the modules they rebuild.
ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "tanh": nn.Tanh,
    "relu": nn.ReLU,
    "leaky_relu": nn.LeakyReLU,
    "elu": nn.ELU,
    "gelu": nn.GELU,
    "silu": nn.SiLU,
    "sigmoid": nn.Sigmoid,
}

# Bounds that keep one submission from eating the arena's time or memory.
MAX_FILE_BYTES = 64 * 2**20
MAX_DESCRIPTION_BYTES = 64 * 2**10
MAX_HIDDEN_LAYERS = 8
MAX_WIDTH = 1024
_NAME_PUNCTUATION = " -_.'@"
_NAME_LENGTH = 64
_FIELDS = ("format", "name", "author", "hidden_sizes", "activation", "ball_forecast")
_OPTIONAL_FIELDS = ("rl_mind_version", "weights")


class SubmissionError(ValueError):
    """A file that is not a valid submission; the message is one line, the reason."""


def _game_sizes() -> tuple[int, int, int]:
    """(observation size, what the ball forecast adds to it, number of actions), as the game
    and its ball forecast define them. (Imported when first needed: importing the game
    registers it, which importing :mod:`rl_mind` must not do.)"""
    from rl_mind.envs.pong_forecast import FORECAST_SIZE
    from rl_mind.envs.pong_game import OBSERVATION_SIZE, PongDuelGame

    return OBSERVATION_SIZE, FORECAST_SIZE, PongDuelGame.n_actions


def check_name(value: Any, what: str) -> str:
    """``value`` if it is a valid agent or author name, else a ``SubmissionError``.

    1 to 64 characters: letters, digits, spaces and ``- _ . ' @``, starting with a letter or
    a digit. The names appear in an HTML page and in CSV files that spreadsheets open, so
    nothing that could be markup or a formula (``=``, ``+``, ``<``) gets through.
    """
    if not isinstance(value, str):
        raise SubmissionError(f"the {what} must be a string, got {type(value).__name__}")
    if not 1 <= len(value) <= _NAME_LENGTH:
        raise SubmissionError(
            f"the {what} must have 1 to {_NAME_LENGTH} characters, got {len(value)}"
        )
    if not value[0].isalnum() or not all(c.isalnum() or c in _NAME_PUNCTUATION for c in value):
        raise SubmissionError(
            f"the {what} {value!r} may hold only letters, digits, spaces and - _ . ' @, "
            f"starting with a letter or a digit"
        )
    return value


@dataclasses.dataclass(frozen=True)
class AgentDescription:
    """What the arena needs to rebuild an agent's network: ``Linear`` layers of widths
    ``[10 (+3 with the ball forecast), *hidden_sizes, 3]`` with ``activation`` between them
    (the policy's logits; the agent plays the most likely action)."""

    name: str
    author: str
    hidden_sizes: tuple[int, ...]
    activation: str = "tanh"
    ball_forecast: bool = True
    rl_mind_version: str = ""

    @property
    def sizes(self) -> list[int]:
        observation_size, forecast_size, n_actions = _game_sizes()
        inputs = observation_size + (forecast_size if self.ball_forecast else 0)
        return [inputs, *self.hidden_sizes, n_actions]

    def expected_shapes(self) -> dict[str, tuple[int, ...]]:
        """The tensors of ``build_mlp(sizes)``'s state dict: ``net.0.weight [out, in]``..."""
        shapes: dict[str, tuple[int, ...]] = {}
        sizes = self.sizes
        for layer, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            shapes[f"net.{2 * layer}.weight"] = (n_out, n_in)
            shapes[f"net.{2 * layer}.bias"] = (n_out,)
        return shapes

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "name": self.name,
            "author": self.author,
            "hidden_sizes": list(self.hidden_sizes),
            "activation": self.activation,
            "ball_forecast": self.ball_forecast,
            "rl_mind_version": self.rl_mind_version,
        }

    @classmethod
    def from_json(cls, data: Any) -> AgentDescription:
        """Check a parsed description; a ``SubmissionError`` says what is wrong."""
        if not isinstance(data, dict):
            raise SubmissionError(
                f"the description must be a JSON object, got {type(data).__name__}"
            )
        if data.get("format") != FORMAT:
            raise SubmissionError(
                f"unknown format {data.get('format')!r} (this rl-mind reads {FORMAT!r}); "
                f"export the agent again with this version's rl_mind.export_agent"
            )
        missing = [field for field in _FIELDS if field not in data]
        if missing:
            raise SubmissionError(f"the description lacks {', '.join(missing)}")
        unknown = sorted(set(data) - set(_FIELDS) - set(_OPTIONAL_FIELDS))
        if unknown:
            raise SubmissionError(f"the description has unknown fields {', '.join(unknown)}")
        hidden = data["hidden_sizes"]
        if (
            not isinstance(hidden, list)
            or not 1 <= len(hidden) <= MAX_HIDDEN_LAYERS
            or not all(type(h) is int and 1 <= h <= MAX_WIDTH for h in hidden)
        ):
            raise SubmissionError(
                f"hidden_sizes must be a list of 1 to {MAX_HIDDEN_LAYERS} widths from 1 to "
                f"{MAX_WIDTH}, got {json.dumps(hidden)[:80]}"
            )
        if data["activation"] not in ACTIVATIONS:
            raise SubmissionError(
                f"unknown activation {str(data['activation'])[:40]!r}; expected one of "
                f"{', '.join(ACTIVATIONS)}"
            )
        if not isinstance(data["ball_forecast"], bool):
            raise SubmissionError("ball_forecast must be true or false")
        version = data.get("rl_mind_version", "")
        if not isinstance(version, str) or len(version) > 40:
            raise SubmissionError("rl_mind_version must be a short string")
        return cls(
            name=check_name(data["name"], "name"),
            author=check_name(data["author"], "author"),
            hidden_sizes=tuple(hidden),
            activation=data["activation"],
            ball_forecast=data["ball_forecast"],
            rl_mind_version=version,
        )


class ArenaAgent(Actor[Action]):
    """A Pong Duel agent rebuilt from its :class:`AgentDescription`; it plays the most
    likely action of its MLP (deterministically).

    ``agent.net`` is ``build_mlp(description.sizes, activation)``, the layer structure of
    the self-play reference's ``PongPolicy`` (state dict keys ``net.0.weight``, ...), so a
    ``PongPolicy``'s weights load into it. ``agent(obs [N, 10])`` → ``Action [N]``,
    ``agent.act(obs)`` → ``[N]`` long, ``agent.act_numpy(obs)`` the same on numpy arrays
    (what the arena's batched matches call).
    """

    def __init__(self, description: AgentDescription) -> None:
        super().__init__()
        self.description = description
        self.ball_forecast = description.ball_forecast
        self.net = build_mlp(description.sizes, activation=ACTIVATIONS[description.activation])
        self.eval()
        self.requires_grad_(False)

    @property
    def name(self) -> str:
        return self.description.name

    def logits(self, obs: Tensor) -> Tensor:
        """The policy's logits ``[N, 3]`` for observations ``[N, 10]``."""
        from rl_mind.envs.pong_forecast import network_input  # (it imports the game)

        return self.net(network_input(obs, self.ball_forecast))  # type: ignore[no-any-return]

    def forward(self, obs: Observation) -> Action:
        return Action(self.act(obs))

    def act(self, obs: Observation) -> Tensor:
        if not isinstance(obs, Tensor):
            raise TypeError(
                f"ArenaAgent: expected a tensor of observations, got {type(obs).__name__}"
            )
        with torch.no_grad():
            return self.logits(obs).argmax(dim=-1)

    def act_numpy(self, obs: np.ndarray) -> np.ndarray:
        return self.act(torch.from_numpy(obs)).numpy()

    def __repr__(self) -> str:
        d = self.description
        return (
            f"ArenaAgent({d.name!r} by {d.author!r}: {d.sizes}, {d.activation}, "
            f"ball_forecast={d.ball_forecast})"
        )


# ====================================================================== export
def _activation_name(module: nn.Module) -> str | None:
    """The allow-list name of an activation module, if it is one with default settings."""
    for name, factory in ACTIVATIONS.items():
        reference = factory()
        if isinstance(module, type(reference)):
            same = all(
                getattr(module, key, None) == value
                for key, value in vars(reference).items()
                if not key.startswith("_") and key not in ("training", "inplace")
            )
            return name if same else None
    return None


def _describe_network(policy: Any, name: str, author: str) -> AgentDescription:
    net = getattr(policy, "net", None)
    expected = (
        "a Pong Duel policy whose .net is an nn.Sequential of Linear layers with one "
        "activation between them (as build_mlp makes it) and with an .act(obs) method"
    )
    if not isinstance(net, nn.Sequential) or not callable(getattr(policy, "act", None)):
        raise TypeError(f"export_agent: expected {expected}, got {type(policy).__name__}")
    layers = list(net)
    linears = [layer for layer in layers[0::2] if type(layer) is nn.Linear]
    activations = layers[1::2]
    if len(layers) % 2 != 1 or len(linears) != len(layers[0::2]) or len(linears) < 2:
        raise ValueError(
            f"export_agent: expected {expected}; this .net is {[type(m).__name__ for m in layers]}"
        )
    names = {_activation_name(module) for module in activations}
    activation = names.pop() if len(names) == 1 else None
    if activation is None:
        raise ValueError(
            f"export_agent: the activations must all be one of {', '.join(ACTIVATIONS)} with "
            f"their default settings; this .net has {[repr(m) for m in activations]}"
        )
    observation_size, forecast_size, n_actions = _game_sizes()
    inputs = int(linears[0].in_features)
    if inputs not in (observation_size, observation_size + forecast_size):
        raise ValueError(
            f"export_agent: the first layer reads {inputs} numbers; a Pong Duel agent reads "
            f"the {observation_size} of the observation, or {observation_size + forecast_size} "
            f"with the ball forecast"
        )
    forecast = inputs == observation_size + forecast_size
    if getattr(policy, "ball_forecast", forecast) != forecast:
        raise ValueError(
            f"export_agent: policy.ball_forecast is {policy.ball_forecast} but its first layer "
            f"reads {inputs} numbers"
        )
    if linears[-1].out_features != n_actions:
        raise ValueError(
            f"export_agent: the last layer must give the {n_actions} action logits, it gives "
            f"{linears[-1].out_features}"
        )
    hidden = [int(layer.out_features) for layer in linears[:-1]]
    if len(hidden) > MAX_HIDDEN_LAYERS or max(hidden) > MAX_WIDTH:
        raise ValueError(
            f"export_agent: the arena takes at most {MAX_HIDDEN_LAYERS} hidden layers of at "
            f"most {MAX_WIDTH} units, got {hidden}"
        )
    from rl_mind import __version__

    try:
        checked_name, checked_author = check_name(name, "name"), check_name(author, "author")
    except SubmissionError as error:
        raise ValueError(f"export_agent: {error}") from None
    return AgentDescription(
        name=checked_name,
        author=checked_author,
        hidden_sizes=tuple(hidden),
        activation=activation,
        ball_forecast=forecast,
        rl_mind_version=__version__,
    )


def _test_observations(count: int = 4096) -> Tensor:
    """``[count, 10]`` random observations within the observation space's bounds (seeded),
    on which an export must play like the original."""
    from rl_mind.envs.pong_duel import pong_duel_observation_space

    space = pong_duel_observation_space()
    low, high = torch.from_numpy(space.low), torch.from_numpy(space.high)
    generator = torch.Generator().manual_seed(0)
    return low + (high - low) * torch.rand(count, *space.shape, generator=generator)


def export_agent(policy: Any, path: str | os.PathLike[str], *, name: str, author: str) -> Path:
    """Write ``policy`` as an arena submission: one ``.safetensors`` file; returns its path.

    Args:
        policy: a Pong Duel policy whose ``.net`` is a ``build_mlp`` MLP (``Linear`` layers
            with one of :data:`ACTIVATIONS` between them) on the observation, or on the
            observation and the ball forecast (13 inputs), giving 3 logits, and whose
            ``.act(obs)`` plays the most likely action: the self-play reference's
            ``PongPolicy``, the practical's ``Policy``, or an :class:`ArenaAgent`.
        path: the file to write, ending in ``.safetensors`` (atomically: a temporary name,
            then a rename).
        name: the agent's name on the leaderboard; author: whose it is (one gradebook row
            per author). Letters, digits, spaces and ``- _ . ' @``, at most 64 characters.

    The file holds the weights (float32) and the description, nothing else: no code. Before
    writing, the rebuilt network plays 4,096 test observations against ``policy.act``; a
    policy whose ``forward`` does something the description cannot say (other features, a
    different head) is refused with a ``ValueError``.
    """
    from safetensors.torch import save_file

    target = Path(path).expanduser().resolve()
    if target.suffix != ".safetensors":
        raise ValueError(f"export_agent: path must end in .safetensors, got {target.name!r}")
    description = _describe_network(policy, name, author)
    tensors = {
        key: value.detach().to("cpu", torch.float32).contiguous().clone()
        for key, value in policy.net.state_dict(prefix="net.").items()
    }
    for key, value in tensors.items():
        if not bool(torch.isfinite(value).all()):
            raise ValueError(f"export_agent: the weights {key} are not all finite (NaN or inf)")
    agent = ArenaAgent(description)
    agent.load_state_dict(tensors)
    obs = _test_observations()
    device = next(policy.net.parameters()).device
    with torch.no_grad():
        expected = torch.as_tensor(policy.act(obs.to(device))).cpu().reshape(-1)
        logits = agent.logits(obs)
    top_two = logits.topk(2, dim=-1).values
    clear = (top_two[:, 0] - top_two[:, 1]) > 1e-4  # (not a near-tie of two actions)
    differs = (expected != logits.argmax(dim=-1)) & clear
    if expected.shape != (len(obs),) or bool(differs.any()):
        count = len(obs) if expected.shape != (len(obs),) else int(differs.sum())
        raise ValueError(
            f"export_agent: the exported network plays differently from policy.act on "
            f"{count} of {len(obs)} test observations; the description (hidden sizes, "
            f"activation, ball forecast) cannot express what this policy's forward does"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        save_file(tensors, temp_name, metadata={METADATA_KEY: json.dumps(description.to_json())})
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    return target


# ====================================================================== loading
@contextlib.contextmanager
def _open_weights(path: Path) -> Iterator[tuple[dict[str, str] | None, Any]]:
    """``(metadata, reader)`` of a safetensors file, size-checked first.

    The reader is safetensors' own (a JSON header and raw tensor bytes: no code); any
    truncation or corruption of the header is a ``SubmissionError``.
    """
    from safetensors import SafetensorError, safe_open

    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise SubmissionError(f"file too large ({size} bytes; at most {MAX_FILE_BYTES})")
    try:
        reader = safe_open(str(path), framework="pt", device="cpu")
    except (SafetensorError, OSError, ValueError) as error:
        raise SubmissionError(
            f"corrupt or truncated: not a readable safetensors file ({_one_line(error)})"
        ) from None
    with reader as handle:
        yield handle.metadata(), handle


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= 160 else text[:157] + "..."


def _load_tensors(handle: Any, description: AgentDescription) -> dict[str, Tensor]:
    from safetensors import SafetensorError

    expected = description.expected_shapes()
    try:
        keys = set(handle.keys())
        if keys != set(expected):
            missing, extra = sorted(set(expected) - keys), sorted(keys - set(expected))
            raise SubmissionError(
                f"wrong tensors for hidden_sizes {list(description.hidden_sizes)}: "
                + "; ".join(
                    part
                    for part in (
                        f"missing {', '.join(missing)}" if missing else "",
                        f"unexpected {', '.join(extra[:4])}" if extra else "",
                    )
                    if part
                )
            )
        tensors: dict[str, Tensor] = {}
        for key, shape in expected.items():
            found = tuple(handle.get_slice(key).get_shape())
            if found != shape:
                raise SubmissionError(
                    f"wrong shape: {key} is {list(found)}, the description says {list(shape)}"
                )
            value = handle.get_tensor(key)
            if not value.is_floating_point():
                raise SubmissionError(f"{key} holds {value.dtype}, expected floating-point weights")
            value = value.to(torch.float32)
            if not bool(torch.isfinite(value).all()):
                raise SubmissionError(f"NaN or infinite weights in {key}")
            tensors[key] = value
    except SafetensorError as error:
        raise SubmissionError(f"corrupt or truncated weights ({_one_line(error)})") from None
    return tensors


def _agent(description: AgentDescription, tensors: dict[str, Tensor]) -> ArenaAgent:
    agent = ArenaAgent(description)
    agent.load_state_dict(tensors)
    return agent


def _load_safetensors(path: Path) -> ArenaAgent:
    with _open_weights(path) as (metadata, handle):
        text = (metadata or {}).get(METADATA_KEY)
        if text is None:
            raise SubmissionError(
                "not a submission: a safetensors file without an rl-mind agent description "
                "(export agents with rl_mind.export_agent)"
            )
        if len(text) > MAX_DESCRIPTION_BYTES:
            raise SubmissionError("the description is too long")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise SubmissionError(f"the description is not valid JSON ({error})") from None
        if "weights" in data:
            raise SubmissionError("a description inside a weights file cannot name other weights")
        description = AgentDescription.from_json(data)
        return _agent(description, _load_tensors(handle, description))


def weights_path(description_file: Path, data: Any) -> Path:
    """Where a ``.json`` description's ``"weights"`` points, checked to stay in its folder."""
    folder = description_file.parent.resolve()
    weights = data.get("weights") if isinstance(data, dict) else None
    if not isinstance(weights, str) or not weights:
        raise SubmissionError('a .json description must name its weights file ("weights")')
    target = (folder / weights).resolve()
    if not target.is_relative_to(folder):
        raise SubmissionError(
            f"the weights path {weights[:80]!r} points outside the submission's folder"
        )
    if target.suffix != ".safetensors":
        raise SubmissionError(
            f"the weights must be a .safetensors file, got {target.name!r} (it was not opened)"
        )
    if not target.is_file():
        raise SubmissionError(f"the weights file {weights[:80]!r} does not exist")
    return target


def read_description_file(path: Path) -> Any:
    """The parsed JSON of a ``.json`` description (size-checked)."""
    size = path.stat().st_size
    if size > MAX_DESCRIPTION_BYTES:
        raise SubmissionError(f"description too large ({size} bytes)")
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SubmissionError(f"not valid JSON ({_one_line(error)})") from None


def _load_json(path: Path) -> ArenaAgent:
    data = read_description_file(path)
    weights = weights_path(path, data)
    description = AgentDescription.from_json(data)
    with _open_weights(weights) as (_metadata, handle):
        return _agent(description, _load_tensors(handle, description))


def load_submission(path: str | os.PathLike[str]) -> ArenaAgent:
    """Load a submission: a ``.safetensors`` file from :func:`export_agent`, or a ``.json``
    description naming a ``.safetensors`` file in its folder.

    Raises :class:`SubmissionError` (one line: why) for anything else; a file of another
    kind is never opened.
    """
    source = Path(path).expanduser()
    if not source.is_file():
        raise SubmissionError(f"no such file: {source}")
    if source.suffix == ".safetensors":
        return _load_safetensors(source)
    if source.suffix == ".json":
        return _load_json(source)
    raise SubmissionError(
        f"not a submission: only .safetensors files (from rl_mind.export_agent) and .json "
        f"descriptions are read; this {source.suffix or 'extensionless'} file was not opened"
    )


# ====================================================================== a selfplay run
REFERENCE_NAME = "reference"


def _activation_of(config: Any) -> str:
    """The activation name of a run's networks (tanh unless its config says otherwise)."""
    value = getattr(config, "activation", "tanh")
    if isinstance(value, str) and value in ACTIVATIONS:
        return value
    for name, factory in ACTIVATIONS.items():
        if value is factory:
            return name
    raise SubmissionError(
        f"the run's networks use an activation the arena cannot rebuild: {value!r}"
    )


def load_reference(run_dir: str | os.PathLike[str], name: str = REFERENCE_NAME) -> ArenaAgent:
    """The best agent of a ``rl-mind selfplay`` run directory, as an :class:`ArenaAgent`.

    "Best" is the highest-rated of the run's snapshots and averaged agent in its
    ``leaderboard.csv`` (the round robin the job plays at the end); a run without one (it
    was interrupted) gives its averaged agent. The ``checkpoint.pt`` is read with
    :func:`~rl_mind.checkpoints.load_checkpoint` (``weights_only``: no code runs).
    """
    from rl_mind.selfplay.checkpoint import CHECKPOINT_NAME, best_weights

    folder = Path(run_dir).expanduser().resolve()
    checkpoint = folder / CHECKPOINT_NAME
    if not checkpoint.is_file():
        raise FileNotFoundError(
            f"{folder} holds no checkpoint.pt: pass the run directory that `rl-mind selfplay` "
            f"printed"
        )
    best = best_weights(folder)
    if best is None:
        raise SubmissionError(f"{checkpoint} is not the checkpoint of a rl-mind selfplay run")
    config, weights = best
    description = AgentDescription(
        name=check_name(name, "name"),
        author="reference run",
        hidden_sizes=tuple(config.hidden_sizes),
        activation=_activation_of(config),
        ball_forecast=config.ball_forecast,
    )
    return _agent(description, {k: v.float() for k, v in weights.items() if k.startswith("net.")})


def load_agent(source: str | os.PathLike[str]) -> Any:
    """An opponent for ``rl-mind play``: a submission file, a selfplay run directory, or the
    name of a bot (``"random"``, ``"scripted"``, ``"predictive"``)."""
    from rl_mind.envs.pong_opponents import BUILTIN_OPPONENTS

    if isinstance(source, str) and source in BUILTIN_OPPONENTS and not Path(source).exists():
        return source
    path = Path(source).expanduser()
    if path.is_dir():
        return load_reference(path, name=path.name if _is_name(path.name) else REFERENCE_NAME)
    return load_submission(path)


def _is_name(text: str) -> bool:
    try:
        check_name(text, "name")
    except SubmissionError:
        return False
    return True
