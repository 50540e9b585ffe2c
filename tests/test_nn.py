"""rl_mind.nn: build_mlp layers and fresh activations, soft_update math and buffers."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from rl_mind.nn import build_mlp, soft_update


# ---------------------------------------------------------------------- build_mlp
def test_build_mlp_layers_and_shapes():
    mlp = build_mlp([4, 8, 16, 2], nn.Tanh)
    kinds = [type(layer) for layer in mlp]
    assert kinds == [nn.Linear, nn.Tanh, nn.Linear, nn.Tanh, nn.Linear]
    linears = [layer for layer in mlp if isinstance(layer, nn.Linear)]
    assert [(lin.in_features, lin.out_features) for lin in linears] == [(4, 8), (8, 16), (16, 2)]
    assert mlp(torch.zeros(5, 4)).shape == (5, 2)
    assert [type(layer) for layer in build_mlp([3, 1])] == [nn.Linear]  # no hidden layer
    assert type(build_mlp([3, 5, 1])[1]) is nn.ReLU  # the default activation


def test_build_mlp_creates_a_fresh_activation_module_per_layer():
    for activation in (nn.ReLU, lambda: nn.LeakyReLU(0.2), nn.ELU(alpha=0.5)):
        mlp = build_mlp([2, 3, 3, 3, 1], activation, output_activation=nn.Sigmoid)
        acts = [layer for layer in mlp if not isinstance(layer, nn.Linear)]
        assert len(acts) == 4 and type(acts[-1]) is nn.Sigmoid
        assert len({id(a) for a in acts}) == 4  # never one shared instance
        assert all(a is not activation for a in acts)
    mlp = build_mlp([2, 3, 1], nn.ELU(alpha=0.5))
    assert mlp[1].alpha == 0.5  # a module instance is copied with its settings
    out = build_mlp([2, 3, 1], output_activation=nn.Tanh())
    assert type(out[-1]) is nn.Tanh and out(torch.full((1, 2), 100.0)).abs().max() <= 1


@pytest.mark.parametrize("sizes", [[4], [], [4, 0, 2], [4, -1], [4, 2.5], [4, True]])
def test_build_mlp_refuses_bad_sizes(sizes):
    with pytest.raises(ValueError, match="build_mlp"):
        build_mlp(sizes)


def test_build_mlp_refuses_an_activation_that_is_not_a_module():
    with pytest.raises(TypeError, match=r"nn.Module class \(e.g. nn.ReLU\).*got <function"):
        build_mlp([2, 3, 1], lambda: torch.relu)


# ---------------------------------------------------------------------- soft_update
def net() -> nn.Module:
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))


def test_soft_update_is_polyak_averaging_and_copies_buffers():
    torch.manual_seed(0)
    source, target = net(), net()
    source.train()
    source(torch.randn(16, 3))  # moves the source's running statistics
    before_target = copy.deepcopy(target.state_dict())
    before_source = copy.deepcopy(source.state_dict())
    soft_update(source, target, tau=0.25)
    for name, param in target.named_parameters():
        expected = 0.25 * before_source[name] + 0.75 * before_target[name]
        assert torch.allclose(param, expected, atol=1e-6), name
        assert param.is_leaf and param.grad_fn is None
    for name, buffer in target.named_buffers():
        assert torch.equal(buffer, before_source[name]), name  # running stats follow
    assert int(target[1].num_batches_tracked) == 1
    for name, value in source.state_dict().items():
        assert torch.equal(value, before_source[name])  # the source is untouched


def test_soft_update_tau_one_is_a_hard_copy_and_tau_zero_keeps_the_parameters():
    torch.manual_seed(1)
    source, target = net(), net()
    kept = copy.deepcopy(target)
    soft_update(source, target, 0.0)
    assert all(torch.equal(a, b) for a, b in zip(target.parameters(), kept.parameters()))
    soft_update(source, target, 1.0)
    assert all(torch.equal(a, b) for a, b in zip(target.parameters(), source.parameters()))


@pytest.mark.parametrize("tau", [-0.1, 1.5, float("nan")])
def test_soft_update_refuses_tau_outside_zero_one(tau):
    with pytest.raises(ValueError, match=r"tau must lie in \[0, 1\]"):
        soft_update(net(), net(), tau)


def test_soft_update_refuses_different_architectures_before_changing_anything():
    target = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    kept = copy.deepcopy(target.state_dict())
    with pytest.raises(ValueError, match=r"the source has 6, the target 4"):
        soft_update(net(), target, 0.5)
    wider = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 5))
    with pytest.raises(ValueError, match=r"'2.weight' has shape \[2, 4\] in the source and "
                       r"'2.weight' \[5, 4\]"):  # fmt: skip
        soft_update(net(), wider, 0.5)  # (0.4 updated the first parameters, then failed)
    assert all(torch.equal(value, kept[name]) for name, value in target.state_dict().items())


def test_soft_update_computes_as_rl_mind_0_4_to_the_last_bit():
    # 0.4: target.mul_(1 - tau).add_(source, alpha=tau); lerp_ rounds differently, and a
    # seeded DDPG/TD3 run drifted from its 0.4 numbers within a few hundred updates
    torch.manual_seed(2)
    source, target = build_mlp([8, 64, 1]), build_mlp([8, 64, 1])
    expected = copy.deepcopy(target)
    for _ in range(200):
        with torch.no_grad():
            for p in source.parameters():
                p.add_(torch.randn_like(p) * 1e-2)
        soft_update(source, target, 0.005)
        with torch.no_grad():
            for p, q in zip(source.parameters(), expected.parameters()):
                q.mul_(1.0 - 0.005).add_(p, alpha=0.005)
    pairs = list(zip(target.parameters(), expected.parameters()))
    assert all(torch.equal(a, b) for a, b in pairs)
    # one more step from the same weights: 0.4's arithmetic and lerp_ give different bits
    stepped, lerped = copy.deepcopy(expected), copy.deepcopy(expected)
    with torch.no_grad():
        for p, a, b in zip(source.parameters(), stepped.parameters(), lerped.parameters()):
            a.mul_(1.0 - 0.005).add_(p, alpha=0.005)
            b.lerp_(p, 0.005)
    assert not all(torch.equal(a, b) for a, b in zip(stepped.parameters(), lerped.parameters()))


def test_soft_update_pairs_parameters_in_order_as_0_4_did_whatever_their_names():
    class TwoLayers(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.hidden, self.out = nn.Linear(3, 4), nn.Linear(4, 2)

    torch.manual_seed(3)
    source, target = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2)), TwoLayers()
    soft_update(source, target, 1.0)
    assert torch.equal(target.hidden.weight, source[0].weight)
    assert torch.equal(target.out.bias, source[1].bias)


def test_build_mlp_refuses_a_function_activation_with_a_clear_message():
    with pytest.raises(TypeError, match=r"pass the module class nn.ReLU"):
        build_mlp([2, 3, 4], torch.relu)
