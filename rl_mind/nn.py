"""Small network helpers: an MLP builder and the soft (Polyak) target update.

What the reader must not get wrong: ``build_mlp`` creates a *fresh* activation module per
layer (one shared instance would be one module registered many times, which breaks hooks
and per-layer inspection), and ``soft_update`` also copies the buffers (e.g. batch-norm
running statistics), which have no gradient and would otherwise never reach the target
(rl-mind 0.4 left them; its arithmetic on the parameters is kept to the last bit).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import torch
from torch import nn

from rl_mind._validation import as_int

__all__ = ["build_mlp", "soft_update"]

ActivationFactory = Callable[[], nn.Module]


def _fresh(activation: ActivationFactory | nn.Module) -> nn.Module:
    if isinstance(activation, nn.Module):
        return copy.deepcopy(activation)
    try:
        module = activation()
    except TypeError:
        module = None  # e.g. torch.relu, a function that needs its input
    if not isinstance(module, nn.Module):
        raise TypeError(
            f"activation must be an nn.Module class (e.g. nn.ReLU) or a factory returning a "
            f"module, got {activation!r} (for a function such as torch.relu, pass the "
            f"module class nn.ReLU instead)"
        )
    return module


def build_mlp(
    sizes: Sequence[int],
    activation: ActivationFactory | nn.Module = nn.ReLU,
    output_activation: ActivationFactory | nn.Module | None = None,
) -> nn.Sequential:
    """A multi-layer perceptron ``[N, sizes[0]] -> [N, sizes[-1]]``.

    ``sizes`` lists the layer widths, input first: ``build_mlp([4, 64, 64, 2], nn.Tanh)`` is
    ``Linear(4, 64), Tanh, Linear(64, 64), Tanh, Linear(64, 2)``. ``activation`` is a module
    class or factory (a module instance is deep-copied per layer); ``output_activation``, if
    given, follows the last layer.
    """
    sizes = list(sizes)
    if len(sizes) < 2:
        raise ValueError(f"build_mlp needs at least an input and an output size, got sizes={sizes}")
    counts = [as_int(size) for size in sizes]
    if any(count is None or count <= 0 for count in counts):
        raise ValueError(f"build_mlp: every size must be a positive int, got sizes={sizes}")
    sizes = [count for count in counts if count is not None]
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(n_in, n_out))
        if i < len(sizes) - 2:
            layers.append(_fresh(activation))
    if output_activation is not None:
        layers.append(_fresh(output_activation))
    return nn.Sequential(*layers)


@torch.no_grad()
def soft_update(source: nn.Module, target: nn.Module, tau: float) -> None:
    """Polyak averaging: ``target ← tau · source + (1 − tau) · target`` for every parameter;
    buffers (running statistics) are copied. ``tau = 1`` is a hard copy.

    The parameters are paired in order, as rl-mind 0.4 did (their names may differ), and
    computed as 0.4 did, ``target.mul_(1 - tau).add_(source, alpha=tau)``: a seeded run
    gets 0.4's numbers to the last bit. A different number of parameters, or a pair of
    different shapes, is refused before anything changes."""
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"soft_update: tau must lie in [0, 1], got {tau}")
    source_params = list(source.named_parameters())
    target_params = list(target.named_parameters())
    if len(source_params) != len(target_params):
        raise ValueError(f"soft_update: source and target must have the same parameters; the "
                         f"source has {len(source_params)}, the target {len(target_params)} "
                         f"(make the target with copy.deepcopy(source))")  # fmt: skip
    for (name, src), (target_name, param) in zip(source_params, target_params):
        if src.shape != param.shape:
            raise ValueError(f"soft_update: parameter {name!r} has shape {list(src.shape)} in "
                             f"the source and {target_name!r} {list(param.shape)} in the "
                             f"target")  # fmt: skip
    for (_, src), (_, param) in zip(source_params, target_params):
        param.mul_(1.0 - tau).add_(src, alpha=tau)  # (0.4's arithmetic: lerp_ rounds otherwise)
    source_buffers = dict(source.named_buffers())
    for name, buffer in target.named_buffers():
        if name in source_buffers:
            buffer.copy_(source_buffers[name])
