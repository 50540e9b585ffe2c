"""rl_mind.checks: every check passes on the reference solutions (read from the practical
sources) and fails, naming the mistake, on typical wrong answers."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from rl_mind import checks, soft_update
from rl_mind.checks import CheckFailure, references
from rl_mind.checks.engine import load_cases

SOURCES = sorted((Path(__file__).parent.parent / "notebooks" / "src").glob("*.py"))


@pytest.fixture(scope="module")
def reference() -> dict[str, Callable[..., Any]]:
    return checks.reference_functions(SOURCES)


def run_check(
    name: str, fn: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> tuple[bool, str]:
    """(passed, what the student reads): the printed line, or the failure's message."""
    # (torch warns of the broadcast this wrong answer makes: part of what the student sees)
    expected = (
        pytest.warns(UserWarning, match="different to the input size")
        if fn is dqn_loss_broadcast
        else contextlib.nullcontext()
    )
    with expected:
        try:
            result = getattr(checks, f"check_{name}")(fn)
        except CheckFailure as failure:
            return False, capsys.readouterr().out + f"✗ {failure}"
    assert result is None
    return True, capsys.readouterr().out


def test_every_gap_has_a_reference_solution_in_the_sources(reference: dict[str, Any]) -> None:
    assert set(reference) == set(checks.SPECS)


def test_the_stored_data_matches_the_reference_solutions(reference: dict[str, Any]) -> None:
    fresh = checks.expected_data(reference)
    assert fresh.keys() == checks.SPECS.keys()

    def same(a: Any, b: Any) -> bool:
        if isinstance(a, torch.Tensor):
            return (
                isinstance(b, torch.Tensor)
                and a.shape == b.shape
                and torch.allclose(a, b, atol=1e-6)
            )
        if isinstance(a, dict):
            return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, list | tuple):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        return bool(a == b)

    for name, spec in checks.SPECS.items():
        assert same(load_cases(spec), fresh[name]), (
            f"the check data of {name} is out of date: run `python -m rl_mind.checks notebooks/src/*.py`"
        )


def test_each_practical_has_its_module_and_data_file() -> None:
    modules = {module.__name__.rsplit(".", 1)[1] for module in checks.practical_modules()}
    assert modules == {source.stem for source in SOURCES}
    for spec in checks.SPECS.values():
        assert spec.data.parent == Path(checks.__file__).parent and spec.data.is_file()


@pytest.mark.parametrize("name", sorted(checks.SPECS))
def test_every_check_passes_on_the_reference(
    name: str, reference: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    passed, out = run_check(name, reference[name], capsys)
    assert passed, out
    assert out.startswith("✓")


def test_a_passing_check_prints_one_line_and_returns_none(
    reference: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert checks.check_gae(reference["gae"]) is None
    assert capsys.readouterr().out == "✓ gae passes all 5 cases\n"
    assert checks.check_ppo_value_loss(reference["ppo_value_loss"]) is None
    assert capsys.readouterr().out == "✓ ppo_value_loss passes its case\n"


def test_a_failing_check_raises_an_assertion_error_with_the_explanation_and_hint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(CheckFailure) as info:
        checks.check_dqn_td_target(dqn_td_target_no_mask)
    assert isinstance(info.value, AssertionError)
    message = str(info.value)
    assert message.startswith("dqn_td_target: case 2/2 (a batch with terminal transitions) fails: ")
    assert "\n  Hint: a terminal step (terminated=True) has no future" in message
    assert capsys.readouterr().out == ""  # nothing printed: the message is the exception's
    # in a notebook IPython shows the message alone, marked, instead of the check's traceback
    shown = info.value._render_traceback_()
    assert shown[0].startswith("\x1b[0;31m✗ dqn_td_target: case 2/2") and len(shown) == 2


def test_a_check_lets_the_students_exception_through() -> None:
    def unfilled(*args: Any) -> Any:
        raise NotImplementedError("the TD target")

    with pytest.raises(NotImplementedError, match="the TD target"):
        checks.check_dqn_td_target(unfilled)


def test_an_unfilled_gap_shows_as_one_line_that_says_what_to_do() -> None:
    def dqn_td_target(*args: Any) -> Any:
        # YOUR CODE HERE: the TD targets
        raise NotImplementedError("dqn_td_target(): not written yet (YOUR CODE HERE)")

    with pytest.raises(NotImplementedError) as info:
        checks.check_dqn_td_target(dqn_td_target)
    # IPython shows these lines instead of the traceback through the check's frames
    (shown,) = info.value._render_traceback_()  # type: ignore[attr-defined]
    assert shown == (
        "\x1b[0;31m✗ dqn_td_target is not written yet (NotImplementedError: dqn_td_target(): "
        "not written yet (YOUR CODE HERE)): write it under YOUR CODE HERE, run its cell, then "
        "this check again\x1b[0m"
    )


def test_a_students_exception_shows_as_one_line_with_the_line_that_raised_it() -> None:
    def dqn_td_target(target_network: Any, batch: Any, gamma: float) -> Any:
        values = target_network(batch.next_obs).max(dim=1).values
        return values + torch.ones(len(values) + 1)  # a shape error of the student's

    with pytest.raises(RuntimeError) as info:
        checks.check_dqn_td_target(dqn_td_target)
    first, where = info.value._render_traceback_()  # type: ignore[attr-defined]
    assert first.startswith("\x1b[0;31m✗ dqn_td_target raised RuntimeError on case 1/2: ")
    assert first.endswith(". Fix dqn_td_target, run its cell, then this check again\x1b[0m")
    assert "must match the size of tensor" in first and "\n" not in first
    assert where.startswith("  in dqn_td_target, line ") and where.endswith(
        ": return values + torch.ones(len(values) + 1)  # a shape error of the student's"
    )


def test_a_not_implemented_error_from_a_library_is_not_a_gap_to_fill() -> None:
    def dqn_td_target(target_network: Any, batch: Any, gamma: float) -> Any:
        return torch.nn.Module()(batch.reward)  # a module without forward: torch raises

    with pytest.raises(NotImplementedError) as info:
        checks.check_dqn_td_target(dqn_td_target)
    first, where = info.value._render_traceback_()  # type: ignore[attr-defined]
    assert "✗ dqn_td_target raised NotImplementedError on case 1/2" in first
    assert "not written yet" not in first and "line" in where


def test_an_error_of_the_check_itself_keeps_its_traceback(
    reference: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rl_mind.checks import engine

    monkeypatch.setattr(engine, "outputs_of", None)  # a bug of the check, not the student's
    with pytest.raises(TypeError, match="not callable") as info:
        checks.check_dqn_td_target(reference["dqn_td_target"])
    assert not hasattr(info.value, "_render_traceback_")


def test_in_a_notebook_a_gap_and_a_students_error_stop_with_the_line_alone(
    tmp_path: Path,
) -> None:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    cells = [
        "from rl_mind.checks import check_dqn_td_target",
        "def dqn_td_target(target_network, batch, gamma):\n"
        "    # YOUR CODE HERE: the TD targets y [N]\n"
        "    raise NotImplementedError('dqn_td_target(): not written yet (YOUR CODE HERE)')",
        "check_dqn_td_target(dqn_td_target)",
        "import torch\n\ndef dqn_td_target(target_network, batch, gamma):\n"
        "    return batch.reward + torch.ones(len(batch.reward) + 1)",
        "check_dqn_td_target(dqn_td_target)",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = NotebookClient(
        notebook, timeout=120, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )  # fmt: skip
    try:
        client.execute()
    except CellExecutionError as error:  # pragma: no cover - allow_errors: never
        raise AssertionError(error) from None
    gap, wrong = (
        next(o for o in notebook.cells[i].outputs if o.output_type == "error") for i in (2, 4)
    )
    assert gap.ename == "NotImplementedError"
    assert len(gap.traceback) == 1 and "✗ dqn_td_target is not written yet" in gap.traceback[0]
    assert wrong.ename == "RuntimeError" and len(wrong.traceback) == 2, wrong.traceback
    assert "✗ dqn_td_target raised RuntimeError on case 1/2" in wrong.traceback[0]
    assert wrong.traceback[1].startswith("  in dqn_td_target, line 4: return batch.reward")
    for output in (gap, wrong):
        assert "rl_mind" not in "".join(output.traceback), output.traceback


def test_a_check_restores_the_random_state(
    reference: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    torch.manual_seed(3)
    expected = torch.rand(1)
    torch.manual_seed(3)
    checks.check_sac_target(reference["sac_target"])
    assert torch.equal(torch.rand(1), expected)
    torch.manual_seed(3)
    with pytest.raises(CheckFailure):
        checks.check_sac_target(sac_no_mask)
    assert torch.equal(torch.rand(1), expected)


def test_a_forgotten_return_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    passed, out = run_check("ppo_value_loss", lambda values, returns: None, capsys)
    assert not passed and "forget `return`" in out


def test_a_check_refuses_what_is_not_a_function() -> None:
    with pytest.raises(TypeError, match="check_gae expects your function gae, got 3"):
        checks.check_gae(3)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- wrong answers
def _not_terminal(batch: Any) -> torch.Tensor:
    return 1.0 - batch.terminated.float()


def dqn_td_target_no_mask(target_network, batch, gamma):
    with torch.no_grad():
        return batch.reward + gamma * target_network(batch.next_obs).max(dim=1).values


def dqn_td_target_with_gradients(target_network, batch, gamma):
    return (
        batch.reward
        + gamma * _not_terminal(batch) * target_network(batch.next_obs).max(dim=1).values
    )


def dqn_td_target_mean_over_actions(target_network, batch, gamma):
    with torch.no_grad():
        return batch.reward + gamma * _not_terminal(batch) * target_network(batch.next_obs).mean(
            dim=1
        )


def dqn_td_target_inverted_mask(target_network, batch, gamma):
    with torch.no_grad():
        next_q = target_network(batch.next_obs).max(dim=1).values
        return batch.reward + gamma * batch.terminated.float() * next_q


def dqn_loss_best_action(q_network, batch, td_target):
    return F.mse_loss(q_network(batch.obs).max(dim=1).values, td_target)


def dqn_loss_sum(q_network, batch, td_target):
    q = q_network(batch.obs).gather(1, batch.action.value.unsqueeze(1)).squeeze(1)
    return ((q - td_target) ** 2).sum()


def dqn_loss_detached(q_network, batch, td_target):
    with torch.no_grad():
        q = q_network(batch.obs).gather(1, batch.action.value.unsqueeze(1)).squeeze(1)
    return F.mse_loss(q, td_target)


def dqn_loss_absolute(q_network, batch, td_target):
    q = q_network(batch.obs).gather(1, batch.action.value.unsqueeze(1)).squeeze(1)
    return (q - td_target).abs().mean()


def returns_forward_cumsum(rewards, gamma):
    return torch.cumsum(rewards, dim=0)


def returns_undiscounted(rewards, gamma):
    return torch.flip(torch.cumsum(torch.flip(rewards, [0]), 0), [0])


def returns_discount_off_by_one(rewards, gamma):
    out, future = torch.zeros_like(rewards), 0.0
    for t in reversed(range(len(rewards))):
        future = gamma * (rewards[t] + future)
        out[t] = future
    return out


def returns_total(rewards, gamma):
    return torch.full_like(rewards, float(rewards.sum()))


def reinforce_sign(log_prob, returns, values):
    return (log_prob * (returns - values).detach()).mean()


def reinforce_no_baseline(log_prob, returns, values):
    return -(log_prob * returns).mean()


def reinforce_baseline_not_detached(log_prob, returns, values):
    return -(log_prob * (returns - values)).mean()


def reinforce_sum(log_prob, returns, values):
    return -(log_prob * (returns - values).detach()).sum()


def _nstep(
    reward,
    next_value,
    terminated,
    truncated,
    gamma,
    *,
    mask_terminal=True,
    reset=True,
    bootstrap_truncated=True,
):
    returns = torch.zeros_like(reward)
    future = next_value[-1].detach()
    for t in reversed(range(len(reward))):
        ended = terminated[t] | (truncated[t] if reset else torch.zeros_like(truncated[t]))
        if not reset:
            ended = torch.zeros_like(ended)
        bootstrap = (
            torch.where(ended, next_value[t].detach(), future)
            if t < len(reward) - 1
            else next_value[t].detach()
        )
        if not bootstrap_truncated:
            bootstrap = torch.where(truncated[t], torch.zeros_like(bootstrap), bootstrap)
        mask = (~terminated[t]).float() if mask_terminal else 1.0
        returns[t] = reward[t] + gamma * mask * bootstrap
        future = returns[t]
    return returns


def nstep_bootstrap_at_terminal(reward, next_value, terminated, truncated, gamma):
    return _nstep(reward, next_value, terminated, truncated, gamma, mask_terminal=False)


def nstep_no_reset(reward, next_value, terminated, truncated, gamma):
    return _nstep(reward, next_value, terminated, truncated, gamma, reset=False)


def nstep_truncation_as_terminal(reward, next_value, terminated, truncated, gamma):
    return _nstep(reward, next_value, terminated, truncated, gamma, bootstrap_truncated=False)


def nstep_with_gradients(reward, next_value, terminated, truncated, gamma):
    done = terminated | truncated
    returns, future = [], next_value[-1]
    for t in reversed(range(len(reward))):
        bootstrap = (
            torch.where(done[t], next_value[t], future) if t < len(reward) - 1 else next_value[t]
        )
        future = reward[t] + gamma * (~terminated[t]).float() * bootstrap
        returns.append(future)
    return torch.stack(returns[::-1])


def a2c_not_detached(log_prob, values, returns):
    return -(log_prob * (returns - values)).mean(), F.mse_loss(values, returns)


def a2c_sign(log_prob, values, returns):
    return (log_prob * (returns - values).detach()).mean(), F.mse_loss(values, returns)


def a2c_no_baseline(log_prob, values, returns):
    return -(log_prob * returns).mean(), F.mse_loss(values, returns)


def a2c_value_detached(log_prob, values, returns):
    return -(log_prob * (returns - values).detach()).mean(), F.mse_loss(values.detach(), returns)


def _gae(
    reward,
    value,
    next_value,
    terminated,
    truncated,
    gamma,
    lam,
    *,
    mask_terminal=True,
    reset=True,
    truncation_terminal=False,
):
    with torch.no_grad():
        terminal = terminated | truncated if truncation_terminal else terminated
        mask = (~terminal).float() if mask_terminal else 1.0
        not_done = (~(terminated | truncated)).float() if reset else torch.ones_like(reward)
        delta = reward + gamma * mask * next_value - value
        out, running = torch.zeros_like(reward), torch.zeros_like(reward[0])
        for t in reversed(range(len(reward))):
            running = delta[t] + gamma * lam * not_done[t] * running
            out[t] = running
        return out


def gae_not_reset(reward, value, next_value, terminated, truncated, gamma, gae_lambda):
    return _gae(reward, value, next_value, terminated, truncated, gamma, gae_lambda, reset=False)


def gae_bootstrap_at_terminal(reward, value, next_value, terminated, truncated, gamma, gae_lambda):
    return _gae(
        reward, value, next_value, terminated, truncated, gamma, gae_lambda, mask_terminal=False
    )


def gae_truncation_as_terminal(reward, value, next_value, terminated, truncated, gamma, gae_lambda):
    return _gae(
        reward,
        value,
        next_value,
        terminated,
        truncated,
        gamma,
        gae_lambda,
        truncation_terminal=True,
    )


def gae_no_lambda(reward, value, next_value, terminated, truncated, gamma, gae_lambda):
    return _gae(reward, value, next_value, terminated, truncated, gamma, 1.0)


def ppo_sign(new_log_prob, old_log_prob, advantages, clip_coef):
    ratio = torch.exp(new_log_prob - old_log_prob)
    return torch.min(
        ratio * advantages, ratio.clamp(1 - clip_coef, 1 + clip_coef) * advantages
    ).mean()


def ppo_no_clip(new_log_prob, old_log_prob, advantages, clip_coef):
    return -(torch.exp(new_log_prob - old_log_prob) * advantages).mean()


def ppo_max(new_log_prob, old_log_prob, advantages, clip_coef):
    ratio = torch.exp(new_log_prob - old_log_prob)
    return -torch.max(
        ratio * advantages, ratio.clamp(1 - clip_coef, 1 + clip_coef) * advantages
    ).mean()


def ppo_log_ratio(new_log_prob, old_log_prob, advantages, clip_coef):
    ratio = new_log_prob / old_log_prob
    return -torch.min(
        ratio * advantages, ratio.clamp(1 - clip_coef, 1 + clip_coef) * advantages
    ).mean()


def value_half(values, returns):
    return 0.5 * F.mse_loss(values, returns)


def value_sum(values, returns):
    return ((values - returns) ** 2).sum()


def value_detached(values, returns):
    return F.mse_loss(values.detach(), returns)


def value_not_squared(values, returns):
    return (values - returns).abs().mean()


def _td3(
    actor_target,
    q1,
    q2,
    batch,
    noise,
    gamma,
    policy_noise,
    noise_clip,
    *,
    combine=torch.min,
    clip_noise=True,
    clamp=True,
    mask=True,
    no_grad=True,
    smoothing=True,
):
    with torch.set_grad_enabled(not no_grad):
        eps = noise * policy_noise if smoothing else torch.zeros_like(noise)
        if clip_noise:
            eps = eps.clamp(-noise_clip, noise_clip)
        action = actor_target.act(batch.next_obs) + eps
        if clamp:
            action = action.clamp(-1, 1)
        next_q = combine(q1(batch.next_obs, action), q2(batch.next_obs, action))
        return batch.reward + gamma * (_not_terminal(batch) if mask else 1.0) * next_q


def td3_max(*args):
    return _td3(*args, combine=torch.max)


def td3_noise_not_clipped(*args):
    return _td3(*args, clip_noise=False)


def td3_no_mask(*args):
    return _td3(*args, mask=False)


def td3_with_gradients(*args):
    return _td3(*args, no_grad=False)


def td3_not_clamped(*args):
    return _td3(*args, clamp=False)


def td3_no_smoothing(*args):
    return _td3(*args, smoothing=False)


def td3_actor_sign(actor, q1, obs):
    return q1(obs, actor.act(obs)).mean()


def td3_actor_no_grad(actor, q1, obs):
    with torch.no_grad():
        action = actor.act(obs)
    return -q1(obs, action).mean()


def td3_actor_exploring(actor, q1, obs):
    return -q1(obs, actor(obs).value).mean()


def update_swapped(networks, target_networks, tau):
    for network, target in zip(networks, target_networks):
        soft_update(target, network, tau)


def update_tau_swapped(networks, target_networks, tau):
    for network, target in zip(networks, target_networks):
        soft_update(network, target, 1.0 - tau)


def update_hard_copy(networks, target_networks, tau):
    for network, target in zip(networks, target_networks):
        target.load_state_dict(network.state_dict())


def _sac(
    actor,
    q1,
    q2,
    batch,
    alpha,
    gamma,
    *,
    entropy_sign=-1.0,
    combine=torch.min,
    mask=True,
    no_grad=True,
):
    with torch.set_grad_enabled(not no_grad):
        action = actor(batch.next_obs)
        next_q = combine(q1(batch.next_obs, action.value), q2(batch.next_obs, action.value))
        soft = next_q + entropy_sign * alpha * action.log_prob
        return batch.reward + gamma * (_not_terminal(batch) if mask else 1.0) * soft


def sac_entropy_sign(*args):
    return _sac(*args, entropy_sign=1.0)


def sac_max(*args):
    return _sac(*args, combine=torch.max)


def sac_no_mask(*args):
    return _sac(*args, mask=False)


def sac_with_gradients(*args):
    return _sac(*args, no_grad=False)


def sac_actor_sign(actor, q1, q2, obs, alpha):
    action = actor(obs)
    return -(
        alpha * action.log_prob - torch.min(q1(obs, action.value), q2(obs, action.value))
    ).mean()


def sac_actor_q1_only(actor, q1, q2, obs, alpha):
    action = actor(obs)
    return (alpha * action.log_prob - q1(obs, action.value)).mean()


def sac_actor_no_entropy(actor, q1, q2, obs, alpha):
    action = actor(obs)
    return (-torch.min(q1(obs, action.value), q2(obs, action.value))).mean()


def sac_actor_detached_action(actor, q1, q2, obs, alpha):
    action = actor(obs)
    value = action.value.detach()
    return (alpha * action.log_prob - torch.min(q1(obs, value), q2(obs, value))).mean()


def temperature_sign(log_alpha, log_prob, target_entropy):
    return (log_alpha * (log_prob + target_entropy).detach()).mean()


def temperature_not_detached(log_alpha, log_prob, target_entropy):
    return -(log_alpha * (log_prob + target_entropy)).mean()


def temperature_alpha(log_alpha, log_prob, target_entropy):
    return -(log_alpha.exp() * (log_prob + target_entropy).detach()).mean()


def temperature_minus_target(log_alpha, log_prob, target_entropy):
    return -(log_alpha * (log_prob - target_entropy).detach()).mean()


# the mistakes whose hints used to blame something else (the cases' generic hints)
def dqn_loss_broadcast(q_network, batch, td_target):
    q = q_network(batch.obs).gather(1, batch.action.value.unsqueeze(1))  # [N, 1]
    return F.mse_loss(q, td_target)  # against [N]: broadcasts to [N, N]


def dqn_loss_broadcast_by_hand(q_network, batch, td_target):
    q = q_network(batch.obs).gather(1, batch.action.value.unsqueeze(1))
    return ((q - td_target) ** 2).mean()


def dqn_td_target_keepdim(target_network, batch, gamma):
    with torch.no_grad():
        next_q = target_network(batch.next_obs).max(dim=1, keepdim=True).values  # [N, 1]
        return batch.reward + gamma * _not_terminal(batch) * next_q


def dqn_td_target_overwrites_the_batch(target_network, batch, gamma):
    with torch.no_grad():
        next_q = target_network(batch.next_obs).max(dim=1).values
        return batch.reward.add_(gamma * _not_terminal(batch) * next_q)


def gae_value_of_the_next_row(reward, value, next_value, terminated, truncated, gamma, gae_lambda):
    with torch.no_grad():
        last = len(reward) - 1
        advantages, running = torch.zeros_like(reward), torch.zeros_like(reward[0])
        for t in reversed(range(len(reward))):
            successor = next_value[t] if t == last else value[t + 1]
            delta = reward[t] + gamma * (~terminated[t]).float() * successor - value[t]
            not_done = (~(terminated[t] | truncated[t])).float()
            running = delta + gamma * gae_lambda * not_done * running
            advantages[t] = running
        return advantages


def gae_overwrites_the_rewards(reward, value, next_value, terminated, truncated, gamma, gae_lambda):
    with torch.no_grad():
        delta = reward  # the same tensor: += below writes into the caller's rewards
        delta += gamma * (~terminated).float() * next_value - value
        not_done = (~(terminated | truncated)).float()
        advantages, running = torch.zeros_like(reward), torch.zeros_like(reward[0])
        for t in reversed(range(len(reward))):
            running = delta[t] + gamma * gae_lambda * not_done[t] * running
            advantages[t] = running
        return advantages


def gae_overwrites_the_values(reward, value, next_value, terminated, truncated, gamma, gae_lambda):
    with torch.no_grad():
        value.mul_(-1.0).add_(reward + gamma * (~terminated).float() * next_value)  # delta
        not_done = (~(terminated | truncated)).float()
        advantages, running = torch.zeros_like(reward), torch.zeros_like(reward[0])
        for t in reversed(range(len(reward))):
            running = value[t] + gamma * gae_lambda * not_done[t] * running
            advantages[t] = running
        return advantages


def nstep_overwrites_the_rewards(reward, next_value, terminated, truncated, gamma):
    with torch.no_grad():
        future = next_value[-1]
        for t in reversed(range(len(reward))):
            bootstrap = torch.where(terminated[t] | truncated[t], next_value[t], future)
            reward[t] += gamma * (~terminated[t]).float() * bootstrap
            future = reward[t]
        return reward


def ppo_clip_ratio_times_advantage(new_log_prob, old_log_prob, advantages, clip_coef):
    surrogate = torch.exp(new_log_prob - old_log_prob) * advantages
    return -torch.min(surrogate, surrogate.clamp(1 - clip_coef, 1 + clip_coef)).mean()


def ppo_clip_advantage(new_log_prob, old_log_prob, advantages, clip_coef):
    ratio = torch.exp(new_log_prob - old_log_prob)
    clipped = ratio * advantages.clamp(1 - clip_coef, 1 + clip_coef)
    return -torch.min(ratio * advantages, clipped).mean()


def ppo_normalizes_the_advantages(new_log_prob, old_log_prob, advantages, clip_coef):
    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    ratio = torch.exp(new_log_prob - old_log_prob)
    clipped = ratio.clamp(1 - clip_coef, 1 + clip_coef) * advantages
    return -torch.min(ratio * advantages, clipped).mean()


def sac_actor_without_alpha(actor, q1, q2, obs, alpha):
    action = actor(obs)
    return (action.log_prob - torch.min(q1(obs, action.value), q2(obs, action.value))).mean()


def sac_target_without_alpha(actor, q1, q2, batch, alpha, gamma):
    with torch.no_grad():
        action = actor(batch.next_obs)
        next_q = torch.min(q1(batch.next_obs, action.value), q2(batch.next_obs, action.value))
        return batch.reward + gamma * _not_terminal(batch) * (next_q - action.log_prob)


def _gae_from_deltas(delta, terminated, truncated, gamma, gae_lambda):
    not_done = (~(terminated | truncated)).float()
    advantages, running = torch.zeros_like(delta), torch.zeros_like(delta[0])
    for t in reversed(range(len(delta))):
        running = delta[t] + gamma * gae_lambda * not_done[t] * running
        advantages[t] = running
    return advantages


def gae_without_gamma_in_the_td_error(
    reward, value, next_value, terminated, truncated, gamma, gae_lambda
):
    with torch.no_grad():
        delta = reward + (~terminated).float() * next_value - value
        return _gae_from_deltas(delta, terminated, truncated, gamma, gae_lambda)


def gae_without_the_value_of_the_state(
    reward, value, next_value, terminated, truncated, gamma, gae_lambda
):
    with torch.no_grad():
        delta = reward + gamma * (~terminated).float() * next_value
        return _gae_from_deltas(delta, terminated, truncated, gamma, gae_lambda)


def gae_returns_advantages_plus_values(
    reward, value, next_value, terminated, truncated, gamma, gae_lambda
):
    with torch.no_grad():
        delta = reward + gamma * (~terminated).float() * next_value - value
        return _gae_from_deltas(delta, terminated, truncated, gamma, gae_lambda) + value


def ppo_without_the_advantages(new_log_prob, old_log_prob, advantages, clip_coef):
    ratio = torch.exp(new_log_prob - old_log_prob)
    return -torch.min(ratio, ratio.clamp(1 - clip_coef, 1 + clip_coef)).mean()


def ppo_clipped_objective_alone(new_log_prob, old_log_prob, advantages, clip_coef):
    ratio = torch.exp(new_log_prob - old_log_prob)
    return -(ratio.clamp(1 - clip_coef, 1 + clip_coef) * advantages).mean()


def a2c_losses_swapped(log_prob, values, returns):
    policy_loss, value_loss = a2c_reference_losses(log_prob, values, returns)
    return value_loss, policy_loss


def a2c_reference_losses(log_prob, values, returns):
    advantages = (returns - values).detach()
    return -(log_prob * advantages).mean(), F.mse_loss(values, returns)


NEWLY_NAMED: list[tuple[str, Callable[..., Any], str]] = [
    ("dqn_loss", dqn_loss_broadcast, "broadcast to [N, N]; .squeeze(1) the gathered Q-values"),
    ("dqn_loss", dqn_loss_broadcast_by_hand, "gather gives [N, 1] and td_target is [N]"),
    ("dqn_td_target", dqn_td_target_keepdim, "a [8, 1] tensor combined with a [8] one broadcasts"),
    ("dqn_td_target", dqn_td_target_overwrites_the_batch, "batch.reward was changed in place"),
    ("gae", gae_value_of_the_next_row, "the TD errors bootstrap from the next row's value"),
    ("gae", gae_without_gamma_in_the_td_error, "the TD errors do not depend on gamma"),
    ("gae", gae_without_the_value_of_the_state, "subtracts the value of the state it starts"),
    ("gae", gae_returns_advantages_plus_values, "these are returns, not advantages"),
    ("gae", gae_overwrites_the_rewards, "reward was changed in place"),
    ("gae", gae_overwrites_the_values, "value was changed in place"),
    ("nstep_returns", nstep_overwrites_the_rewards, "reward was changed in place"),
    ("ppo_policy_loss", ppo_clip_ratio_times_advantage, "clip the probability ratio alone"),
    ("ppo_policy_loss", ppo_clip_advantage, "clip the probability ratio alone"),
    ("ppo_policy_loss", ppo_normalizes_the_advantages, "do not normalize the advantages"),
    ("ppo_policy_loss", ppo_without_the_advantages, "does not change when the advantages change"),
    (
        "ppo_policy_loss",
        ppo_max,
        "the minimum of the clipped and unclipped objectives, not the max",
    ),
    ("ppo_policy_loss", ppo_clipped_objective_alone, "per sample, the minimum of the clipped"),
    ("a2c_loss", a2c_losses_swapped, "right but in the wrong order"),
    ("a2c_loss", a2c_no_baseline, "the baseline is missing"),
    ("sac_actor_loss", sac_actor_without_alpha, "the loss does not change with alpha"),
    ("sac_target", sac_target_without_alpha, "the target does not change with alpha"),
]


# dynamic programming (the maze practical): P [S, A, S], r [S, A], terminal [S] bool
def _future(P, gamma, terminal, v):
    return gamma * (~terminal).double().unsqueeze(1) * (P @ v)


def q_no_discount(P, r, gamma, terminal, v):
    return r + (~terminal).double().unsqueeze(1) * (P @ v)


def q_bootstrap_at_terminal(P, r, gamma, terminal, v):
    return r + gamma * (P @ v)


def q_reward_of_the_next_state(P, r, gamma, terminal, v):
    # r[s', a]: the reward of a transition from the state reached
    return torch.einsum("sat,ta->sa", P, r) + _future(P, gamma, terminal, v)


def q_max_over_next_states(P, r, gamma, terminal, v):
    best_next = (P * v).max(dim=2).values / P.max(dim=2).values  # the likeliest-looking s'
    return r + gamma * (~terminal).double().unsqueeze(1) * best_next


def _sweeps(backup, P, tolerance, max_sweeps=100_000):
    v = torch.zeros(P.shape[0], dtype=P.dtype)
    for _ in range(max_sweeps):
        new_v = backup(v)
        if (new_v - v).abs().max() < tolerance:
            return new_v
        v = new_v
    return v


def _q(P, r, gamma, terminal, v):
    return r + _future(P, gamma, terminal, v)


def evaluation_max_over_actions(P, r, gamma, terminal, policy, tolerance):
    return _sweeps(lambda v: _q(P, r, gamma, terminal, v).max(dim=1).values, P, tolerance)


def evaluation_mean_over_actions(P, r, gamma, terminal, policy, tolerance):
    return _sweeps(lambda v: _q(P, r, gamma, terminal, v).mean(dim=1), P, tolerance)


def evaluation_one_sweep(P, r, gamma, terminal, policy, tolerance):
    return _sweeps(lambda v: (policy * _q(P, r, gamma, terminal, v)).sum(1), P, tolerance, 1)


def evaluation_bootstrap_at_terminal(P, r, gamma, terminal, policy, tolerance):
    return _sweeps(lambda v: (policy * (r + gamma * (P @ v))).sum(1), P, tolerance)


def evaluation_in_place(P, r, gamma, terminal, policy, tolerance):  # a right answer
    v = torch.zeros(P.shape[0], dtype=P.dtype)
    while True:
        change = 0.0
        for s in range(len(v)):
            future = 0.0 if terminal[s] else gamma * (P[s] @ v)
            new = float((policy[s] * (r[s] + future)).sum())
            change, v[s] = max(change, abs(new - float(v[s]))), new
        if change < tolerance:
            return v


def iteration_mean_over_actions(P, r, gamma, terminal, tolerance, max_sweeps):
    return _sweeps(lambda v: _q(P, r, gamma, terminal, v).mean(dim=1), P, tolerance)


def iteration_bootstrap_at_terminal(P, r, gamma, terminal, tolerance, max_sweeps):
    return _sweeps(lambda v: (r + gamma * (P @ v)).max(dim=1).values, P, tolerance)


def iteration_ten_sweeps(P, r, gamma, terminal, tolerance, max_sweeps):
    return _sweeps(lambda v: _q(P, r, gamma, terminal, v).max(dim=1).values, P, tolerance, 10)


def iteration_in_place(P, r, gamma, terminal, tolerance, max_sweeps):  # a right answer
    v = torch.zeros(P.shape[0], dtype=P.dtype)
    for _ in range(max_sweeps):
        change = 0.0
        for s in range(len(v)):
            future = 0.0 if terminal[s] else gamma * (P[s] @ v)
            new = float((r[s] + future).max())
            change, v[s] = max(change, abs(new - float(v[s]))), new
        if change < tolerance:
            break
    return v


def greedy_reward_only(P, r, gamma, terminal, v):
    return F.one_hot(r.argmax(dim=1), r.shape[1]).double()


def greedy_argmin(P, r, gamma, terminal, v):
    return F.one_hot(_q(P, r, gamma, terminal, v).argmin(dim=1), r.shape[1]).double()


def greedy_bootstrap_at_terminal(P, r, gamma, terminal, v):
    return F.one_hot((r + gamma * (P @ v)).argmax(dim=1), r.shape[1]).double()


def greedy_actions_not_probabilities(P, r, gamma, terminal, v):
    return _q(P, r, gamma, terminal, v).argmax(dim=1).double()


# tabular: q [S, A], step an EnvStep, next_action [B]
def epsilon_greedy_no_share_for_the_greedy(q, obs, epsilon):
    greedy = F.one_hot(q[obs].argmax(dim=1), q.shape[1]).float()
    return (1 - epsilon) * greedy + epsilon / (q.shape[1] - 1) * (1 - greedy)


def epsilon_greedy_argmin(q, obs, epsilon):
    worst = F.one_hot(q[obs].argmin(dim=1), q.shape[1]).float()
    return epsilon / q.shape[1] + (1 - epsilon) * worst


def epsilon_greedy_swapped(q, obs, epsilon):
    greedy = F.one_hot(q[obs].argmax(dim=1), q.shape[1]).float()
    return (1 - epsilon) / q.shape[1] + epsilon * greedy


def _bootstrap(step, gamma, next_value, mask):
    return step.reward + gamma * mask * next_value


def q_learning_with_the_sarsa_target(q, step, next_action, gamma):
    return _bootstrap(step, gamma, q[step.next_obs, next_action], (~step.terminated).float())


def q_learning_bootstrap_at_terminal(q, step, next_action, gamma):
    return _bootstrap(step, gamma, q[step.next_obs].max(dim=1).values, 1.0)


def q_learning_truncation_as_terminal(q, step, next_action, gamma):
    return _bootstrap(step, gamma, q[step.next_obs].max(dim=1).values, (~step.done).float())


def q_learning_from_obs(q, step, next_action, gamma):
    return _bootstrap(step, gamma, q[step.obs].max(dim=1).values, (~step.terminated).float())


def sarsa_with_the_q_learning_target(q, step, next_action, gamma):
    return _bootstrap(step, gamma, q[step.next_obs].max(dim=1).values, (~step.terminated).float())


def sarsa_bootstrap_at_terminal(q, step, next_action, gamma):
    return _bootstrap(step, gamma, q[step.next_obs, next_action], 1.0)


def sarsa_truncation_as_terminal(q, step, next_action, gamma):
    return _bootstrap(step, gamma, q[step.next_obs, next_action], (~step.done).float())


def td_learning_rate_on_the_target(q, obs, action, target, learning_rate):
    new_q = q.clone()
    new_q[obs, action] = q[obs, action] + learning_rate * target
    return new_q


def td_replace_by_the_scaled_target(q, obs, action, target, learning_rate):
    new_q = q.clone()
    new_q[obs, action] = learning_rate * target
    return new_q


def td_whole_row(q, obs, action, target, learning_rate):
    new_q = q.clone()
    new_q[obs] += (learning_rate * (target - q[obs, action])).unsqueeze(1)  # every action
    return new_q


def td_in_place(q, obs, action, target, learning_rate):
    q[obs, action] += learning_rate * (target - q[obs, action])
    return q


TABULAR_WRONG_ANSWERS: list[tuple[str, Callable[..., Any], str]] = [
    ("q_from_v", q_no_discount, "the future is discounted"),
    ("q_from_v", q_bootstrap_at_terminal, "a terminal state has no future"),
    ("q_from_v", q_reward_of_the_next_state, "the reward of taking a in s"),
    ("q_from_v", q_max_over_next_states, "an expectation over next states"),
    ("policy_evaluation", evaluation_max_over_actions, "does not change with the policy"),
    ("policy_evaluation", evaluation_mean_over_actions, "does not change with the policy"),
    ("policy_evaluation", evaluation_one_sweep, "until the largest change"),
    ("policy_evaluation", evaluation_bootstrap_at_terminal, "a terminal state has no future"),
    ("value_iteration", iteration_mean_over_actions, "not an average over actions"),
    ("value_iteration", iteration_bootstrap_at_terminal, "a terminal state has no future"),
    ("value_iteration", iteration_ten_sweeps, "until the largest change"),
    ("greedy_policy", greedy_reward_only, "not the reward alone"),
    ("greedy_policy", greedy_argmin, "largest q(s, a)"),
    ("greedy_policy", greedy_bootstrap_at_terminal, "a terminal state has no future"),
    ("greedy_policy", greedy_actions_not_probabilities, "expected shape [6, 3], got [6]"),
    ("epsilon_greedy", epsilon_greedy_no_share_for_the_greedy, "1 / n_actions"),
    ("epsilon_greedy", epsilon_greedy_argmin, "the argmax of q[obs]"),
    ("epsilon_greedy", epsilon_greedy_swapped, "the argmax of q[obs]"),
    (
        "q_learning_target",
        q_learning_with_the_sarsa_target,
        "bootstrapping from next_action is SARSA",
    ),
    ("q_learning_target", q_learning_bootstrap_at_terminal, "terminal step"),
    ("q_learning_target", q_learning_truncation_as_terminal, "a truncation"),
    ("q_learning_target", q_learning_from_obs, "best action in next_obs"),
    ("sarsa_target", sarsa_with_the_q_learning_target, "not from the best action"),
    ("sarsa_target", sarsa_bootstrap_at_terminal, "terminal step"),
    ("sarsa_target", sarsa_truncation_as_terminal, "a truncation"),
    ("td_update", td_learning_rate_on_the_target, "not learning_rate times the target"),
    ("td_update", td_replace_by_the_scaled_target, "not learning_rate times the target"),
    ("td_update", td_whole_row, "leave the other entries"),
    ("td_update", td_in_place, "q was changed in place"),
]


# the maze practicals' mistakes whose hints used to name another one (issue 61): each is
# named, and none of the other mistakes' words appear
def greedy_ones_on_every_tied_action(P, r, gamma, terminal, v):
    q = _q(P, r, gamma, terminal, v)
    return (q == q.max(dim=1, keepdim=True).values).double()


def iteration_ignores_max_sweeps(P, r, gamma, terminal, tolerance, max_sweeps):
    v = torch.zeros(P.shape[0], dtype=P.dtype)
    while True:  # (with tolerance = 0: forever)
        new_v = _q(P, r, gamma, terminal, v).max(dim=1).values
        if (new_v - v).abs().max() < tolerance:
            return new_v
        v = new_v


def iteration_one_sweep_too_many(P, r, gamma, terminal, tolerance, max_sweeps):
    backup = lambda v: _q(P, r, gamma, terminal, v).max(dim=1).values  # noqa: E731
    return _sweeps(backup, P, tolerance, max_sweeps + 1)


def iteration_one_sweep_too_few(P, r, gamma, terminal, tolerance, max_sweeps):
    backup = lambda v: _q(P, r, gamma, terminal, v).max(dim=1).values  # noqa: E731
    return _sweeps(backup, P, tolerance, max_sweeps - 1)


def iteration_without_gamma(P, r, gamma, terminal, tolerance, max_sweeps):
    no_gamma = lambda v: (r + (~terminal).double().unsqueeze(1) * (P @ v)).max(dim=1).values  # noqa: E731
    return _sweeps(no_gamma, P, tolerance, max_sweeps)


def iteration_stops_on_the_signed_change(P, r, gamma, terminal, tolerance, max_sweeps):
    v = torch.zeros(P.shape[0], dtype=P.dtype)
    for _ in range(max_sweeps):
        new_v = _q(P, r, gamma, terminal, v).max(dim=1).values
        if (new_v - v).max() < tolerance:
            return new_v
        v = new_v
    return v


def iteration_returns_the_best_actions(P, r, gamma, terminal, tolerance, max_sweeps):
    backup = lambda v: _q(P, r, gamma, terminal, v).max(dim=1).values  # noqa: E731
    v = _sweeps(backup, P, tolerance, max_sweeps)
    return _q(P, r, gamma, terminal, v).argmax(dim=1).double()


def greedy_without_gamma(P, r, gamma, terminal, v):
    return F.one_hot(_q(P, r, 1.0, terminal, v).argmax(dim=1), r.shape[1]).double()


def evaluation_own_look_ahead_without_gamma(P, r, gamma, terminal, policy, tolerance):
    v = torch.zeros(P.shape[0], dtype=P.dtype)
    while True:  # (never converges without a terminal state)
        new_v = (policy * (r + (~terminal).double().unsqueeze(1) * (P @ v))).sum(dim=1)
        if (new_v - v).abs().max() < tolerance:
            return new_v
        v = new_v


def evaluation_stops_on_the_signed_change(P, r, gamma, terminal, policy, tolerance):
    v = torch.zeros(P.shape[0], dtype=P.dtype)
    while True:
        new_v = (policy * _q(P, r, gamma, terminal, v)).sum(dim=1)
        if (new_v - v).max() < tolerance:
            return new_v
        v = new_v


def evaluation_drops_terminal_next_values(P, r, gamma, terminal, policy, tolerance):
    backup = lambda v: (policy * (r + gamma * (P @ (v * ~terminal)))).sum(1)  # noqa: E731
    return _sweeps(backup, P, tolerance)


def iteration_drops_terminal_next_values(P, r, gamma, terminal, tolerance, max_sweeps):
    backup = lambda v: (r + gamma * (P @ (v * ~terminal))).max(dim=1).values  # noqa: E731
    return _sweeps(backup, P, tolerance, max_sweeps)


def q_drops_terminal_next_values(P, r, gamma, terminal, v):
    return r + gamma * (P @ torch.where(terminal, 0.0, v))


def q_drops_terminal_next_values_and_future(P, r, gamma, terminal, v):
    return r + _future(P, gamma, terminal, torch.where(terminal, 0.0, v))


def q_discounts_the_reward(P, r, gamma, terminal, v):
    return gamma * (r + (~terminal).double().unsqueeze(1) * (P @ v))


def _next_max(q, step):
    return q[step.next_obs].max(dim=1).values


def q_learning_without_gamma(q, step, next_action, gamma):
    return _bootstrap(step, 1.0, _next_max(q, step), (~step.terminated).float())


def q_learning_discounts_the_reward(q, step, next_action, gamma):
    return gamma * _bootstrap(step, 1.0, _next_max(q, step), (~step.terminated).float())


def q_learning_inverted_mask(q, step, next_action, gamma):
    return _bootstrap(step, gamma, _next_max(q, step), step.terminated.float())


def q_learning_keepdim(q, step, next_action, gamma):
    next_value = q[step.next_obs].max(dim=1, keepdim=True).values  # [B, 1]
    return step.reward + gamma * (~step.terminated) * next_value


def sarsa_without_gamma(q, step, next_action, gamma):
    return _bootstrap(step, 1.0, q[step.next_obs, next_action], (~step.terminated).float())


def sarsa_discounts_the_reward(q, step, next_action, gamma):
    mask = (~step.terminated).float()
    return gamma * _bootstrap(step, 1.0, q[step.next_obs, next_action], mask)


def sarsa_inverted_mask(q, step, next_action, gamma):
    return _bootstrap(step, gamma, q[step.next_obs, next_action], step.terminated.float())


def sarsa_from_obs(q, step, next_action, gamma):
    return _bootstrap(step, gamma, q[step.obs, next_action], (~step.terminated).float())


def sarsa_every_pair(q, step, next_action, gamma):
    next_value = q[step.next_obs][:, next_action]  # [B, B]: every (row, action) pair
    return step.reward + gamma * (~step.terminated) * next_value


def td_rates_swapped(q, obs, action, target, learning_rate):
    new_q = q.clone()
    new_q[obs, action] = learning_rate * q[obs, action] + (1 - learning_rate) * target
    return new_q


NOT_GAMMA = ("gamma", "discount")
MAZE_MISTAKES: list[tuple[str, Callable[..., Any], str, tuple[str, ...]]] = [
    # (check, wrong answer, a phrase the message must contain, words it must not contain)
    ("greedy_policy", greedy_ones_on_every_tied_action, "has a tie", ("reward alone",)),
    (
        "value_iteration",
        iteration_ignores_max_sweeps,
        "does not stop after max_sweeps = 3 sweeps",
        ("average", *NOT_GAMMA),
    ),
    ("value_iteration", iteration_one_sweep_too_many, "not one more", ("average", "gamma")),
    ("value_iteration", iteration_one_sweep_too_few, "not one less", ("average", "gamma")),
    ("value_iteration", iteration_without_gamma, "do not change with gamma", ("average",)),
    (
        "value_iteration",
        iteration_stops_on_the_signed_change,
        "*absolute* change",
        ("average", "max_sweeps"),
    ),
    ("greedy_policy", greedy_without_gamma, "the future is discounted", ("reward alone", "tie")),
    ("value_iteration", iteration_returns_the_best_actions, "not the best actions", ("gamma",)),
    (
        "policy_evaluation",
        evaluation_own_look_ahead_without_gamma,
        "does not converge within 2,000 sweeps: the values do not change with gamma",
        ("max", "policy[s, a]"),
    ),
    (
        "policy_evaluation",
        evaluation_stops_on_the_signed_change,
        "*absolute* change",
        ("an expectation", "not a max", "gamma"),
    ),
    (
        "policy_evaluation",
        evaluation_drops_terminal_next_values,
        "dropped where it is the *next* state",
        ("gamma",),
    ),
    ("q_from_v", q_drops_terminal_next_values, "dropped where it is the *next* state", ()),
    (
        "value_iteration",
        iteration_drops_terminal_next_values,
        "dropped where it is the *next* state",
        ("gamma", "average"),
    ),
    (
        "q_from_v",
        q_drops_terminal_next_values_and_future,
        "dropped where it is the *next* state",
        (),
    ),
    ("q_from_v", q_discounts_the_reward, "it is not discounted", ("next state, nor",)),
    ("q_learning_target", q_learning_without_gamma, "do not change with gamma", ("SARSA",)),
    ("q_learning_target", q_learning_discounts_the_reward, "not discounted", ("SARSA",)),
    ("q_learning_target", q_learning_inverted_mask, "terminated mask inverted", ("SARSA",)),
    ("q_learning_target", q_learning_from_obs, "step.obs", ("SARSA", "truncation")),
    ("q_learning_target", q_learning_keepdim, "a [6, 1] tensor combined with a [6] one", ()),
    ("sarsa_target", sarsa_without_gamma, "do not change with gamma", ("Q-learning",)),
    ("sarsa_target", sarsa_discounts_the_reward, "not discounted", ("Q-learning",)),
    ("sarsa_target", sarsa_inverted_mask, "terminated mask inverted", ("Q-learning",)),
    ("sarsa_target", sarsa_from_obs, "step.obs", ("Q-learning", "truncation")),
    ("sarsa_target", sarsa_every_pair, "every (row, column) pair", ("[6, 1]",)),
    ("td_update", td_rates_swapped, "are swapped", ("its own target[i]",)),
]


WRONG_ANSWERS: list[tuple[str, Callable[..., Any], str]] = [
    # (check, wrong function, a phrase the message must contain)
    ("dqn_td_target", dqn_td_target_no_mask, "terminal step"),
    ("dqn_td_target", dqn_td_target_with_gradients, "carries gradients"),
    ("dqn_td_target", dqn_td_target_mean_over_actions, "best action"),
    ("dqn_td_target", dqn_td_target_inverted_mask, "ordinary transitions"),
    ("dqn_loss", dqn_loss_best_action, "action taken"),
    ("dqn_loss", dqn_loss_sum, "do not sum"),
    ("dqn_loss", dqn_loss_detached, "no gradient reaches q_network"),
    ("dqn_loss", dqn_loss_absolute, "mean squared error"),
    ("discounted_returns", returns_forward_cumsum, "the future, not the past"),
    ("discounted_returns", returns_undiscounted, "discounted by one more factor of gamma"),
    ("discounted_returns", returns_discount_off_by_one, "its own reward, not discounted"),
    ("discounted_returns", returns_total, "the future, not the past"),
    ("reinforce_loss", reinforce_sign, "sign error"),
    ("reinforce_loss", reinforce_no_baseline, "minus the baseline"),
    ("reinforce_loss", reinforce_baseline_not_detached, "gradients into the baseline"),
    ("reinforce_loss", reinforce_sum, "do not sum"),
    ("nstep_returns", nstep_bootstrap_at_terminal, "terminal step"),
    ("nstep_returns", nstep_no_reset, "back across the boundary"),
    ("nstep_returns", nstep_truncation_as_terminal, "truncated step is not terminal"),
    ("nstep_returns", nstep_with_gradients, "carries gradients"),
    ("a2c_loss", a2c_not_detached, "gradients into the critic"),
    ("a2c_loss", a2c_sign, "sign error"),
    ("a2c_loss", a2c_no_baseline, "return minus value"),
    ("a2c_loss", a2c_value_detached, "no gradient of the value loss"),
    ("gae", gae_not_reset, "restart at an episode boundary"),
    ("gae", gae_bootstrap_at_terminal, "terminal step"),
    ("gae", gae_truncation_as_terminal, "truncated step is not terminal"),
    ("gae", gae_no_lambda, "gamma * gae_lambda"),
    ("ppo_policy_loss", ppo_sign, "sign error"),
    ("ppo_policy_loss", ppo_no_clip, "clip the ratio"),
    ("ppo_policy_loss", ppo_max, "minimum"),
    ("ppo_policy_loss", ppo_log_ratio, "exp(new_log_prob - old_log_prob)"),
    ("ppo_value_loss", value_half, "factor 0.5"),
    ("ppo_value_loss", value_sum, "do not sum"),
    ("ppo_value_loss", value_detached, "no gradient reaches values"),
    ("ppo_value_loss", value_not_squared, "mean squared error"),
    ("td3_target", td3_max, "smaller of the two target critics"),
    ("td3_target", td3_noise_not_clipped, "clip the smoothing noise"),
    ("td3_target", td3_no_mask, "terminal step"),
    ("td3_target", td3_with_gradients, "carries gradients"),
    ("td3_target", td3_not_clamped, "action bounds"),
    ("td3_target", td3_no_smoothing, "target policy smoothing"),
    ("td3_actor_loss", td3_actor_sign, "sign error"),
    ("td3_actor_loss", td3_actor_no_grad, "no gradient reaches the actor"),
    ("td3_actor_loss", td3_actor_exploring, "deterministic action"),
    ("update_targets", update_swapped, "networks[0] was modified"),
    ("update_targets", update_tau_swapped, "fraction tau"),
    ("update_targets", update_hard_copy, "fraction tau"),
    ("sac_target", sac_entropy_sign, "entropy bonus"),
    ("sac_target", sac_max, "smaller of the two target critics"),
    ("sac_target", sac_no_mask, "terminal step"),
    ("sac_target", sac_with_gradients, "carries gradients"),
    ("sac_actor_loss", sac_actor_sign, "sign error"),
    ("sac_actor_loss", sac_actor_q1_only, "smaller of the two critics"),
    ("sac_actor_loss", sac_actor_no_entropy, "entropy"),
    ("sac_actor_loss", sac_actor_detached_action, "no gradient reaches the actor"),
    ("sac_temperature_loss", temperature_sign, "sign error"),
    ("sac_temperature_loss", temperature_not_detached, "detach it"),
    ("sac_temperature_loss", temperature_alpha, "log_alpha (not alpha)"),
    ("sac_temperature_loss", temperature_minus_target, "entropy gap"),
    *NEWLY_NAMED,
    *TABULAR_WRONG_ANSWERS,
    *[(name, wrong, phrase) for name, wrong, phrase, _ in MAZE_MISTAKES],
]


@pytest.mark.parametrize(
    ("name", "wrong", "phrase"),
    WRONG_ANSWERS,
    ids=[wrong.__name__ for _, wrong, _ in WRONG_ANSWERS],
)
def test_a_typical_wrong_answer_fails_with_a_message_naming_the_mistake(
    name: str, wrong: Callable[..., Any], phrase: str, capsys: pytest.CaptureFixture[str]
) -> None:
    passed, out = run_check(name, wrong, capsys)
    assert not passed
    assert out.startswith(f"✗ {name}: case ")
    assert phrase in out, out


@pytest.mark.parametrize(
    ("name", "wrong", "phrase", "unrelated"),
    MAZE_MISTAKES,
    ids=[wrong.__name__ for _, wrong, _, _ in MAZE_MISTAKES],
)
def test_a_maze_mistake_is_named_and_no_other_one_is(
    name: str,
    wrong: Callable[..., Any],
    phrase: str,
    unrelated: tuple[str, ...],
    capsys: pytest.CaptureFixture[str],
) -> None:
    import time

    start = time.monotonic()
    passed, out = run_check(name, wrong, capsys)
    assert time.monotonic() - start < 30.0  # (the check cell returns, even on an endless loop)
    assert not passed and phrase in out, out
    for words in unrelated:
        assert words not in out, out


# every correct form of the maze practicals' functions passes (issue 61), in-place sweeps
# (evaluation_in_place, iteration_in_place) like synchronous ones
def q_by_einsum(P, r, gamma, terminal, v):
    future = gamma * torch.einsum("sat,t->sa", P, v)
    return r + torch.where(terminal.unsqueeze(1), 0.0, future)


def q_by_loops(P, r, gamma, terminal, v):
    q = torch.zeros_like(r)
    for s in range(P.shape[0]):
        for a in range(P.shape[1]):
            future = sum(float(P[s, a, t]) * float(v[t]) for t in range(P.shape[2]))
            q[s, a] = r[s, a] + (0.0 if terminal[s] else gamma * future)
    return q


def evaluation_by_a_linear_solve(P, r, gamma, terminal, policy, tolerance):
    r_pi = (policy * r).sum(dim=1)
    P_pi = torch.einsum("sa,sat->st", policy, P) * (~terminal).unsqueeze(1).to(P.dtype)
    return torch.linalg.solve(torch.eye(len(r_pi), dtype=P.dtype) - gamma * P_pi, r_pi)


def evaluation_by_einsum(P, r, gamma, terminal, policy, tolerance):
    v = torch.zeros(P.shape[0], dtype=P.dtype)
    not_terminal = (~terminal).to(P.dtype)
    while True:
        future = gamma * not_terminal * torch.einsum("sa,sat,t->s", policy, P, v)
        new_v = (policy * r).sum(dim=1) + future
        if torch.max(torch.abs(new_v - v)) < tolerance:
            return new_v
        v = new_v


def evaluation_by_loops_over_entries(P, r, gamma, terminal, policy, tolerance):
    n_states, n_actions, _ = P.shape
    v = [0.0] * n_states
    while True:
        change = 0.0
        for s in range(n_states):
            total = 0.0
            for a in range(n_actions):
                future = 0.0
                if not terminal[s]:
                    future = sum(float(P[s, a, t]) * v[t] for t in range(n_states))
                total += float(policy[s, a]) * (float(r[s, a]) + gamma * future)
            change, v[s] = max(change, abs(total - v[s])), total
        if change < tolerance:
            return torch.tensor(v, dtype=P.dtype)


def iteration_in_place_in_reverse_order(P, r, gamma, terminal, tolerance, max_sweeps):
    v = torch.zeros(P.shape[0], dtype=P.dtype)
    for _ in range(max_sweeps):
        change = 0.0
        for s in reversed(range(len(v))):
            future = 0.0 if terminal[s] else gamma * (P[s] @ v)
            new = float((r[s] + future).max())
            change, v[s] = max(change, abs(new - float(v[s]))), new
        if change < tolerance:
            break
    return v


def iteration_by_einsum(P, r, gamma, terminal, tolerance, max_sweeps):
    v = torch.zeros(P.shape[0], dtype=P.dtype)
    for _ in range(max_sweeps):
        q = r + gamma * (~terminal).to(P.dtype).unsqueeze(1) * torch.einsum("sat,t->sa", P, v)
        new_v, v_old = q.amax(dim=1), v
        v = new_v
        if (new_v - v_old).abs().max() < tolerance:
            break
    return v


def iteration_counting_sweeps(P, r, gamma, terminal, tolerance, max_sweeps):
    v, sweeps = torch.zeros(P.shape[0], dtype=P.dtype), 0
    while sweeps < max_sweeps:
        new_v = _q(P, r, gamma, terminal, v).max(dim=1).values
        sweeps += 1
        converged = bool((new_v - v).abs().max() < tolerance)
        v = new_v
        if converged:
            break
    return v


def greedy_ties_split(P, r, gamma, terminal, v):
    q = _q(P, r, gamma, terminal, v)
    best = (q == q.max(dim=1, keepdim=True).values).double()
    return best / best.sum(dim=1, keepdim=True)


def greedy_last_of_the_best(P, r, gamma, terminal, v):
    q = _q(P, r, gamma, terminal, v)
    policy = torch.zeros_like(q)
    for s in range(q.shape[0]):
        best = 0
        for a in range(q.shape[1]):
            if q[s, a] >= q[s, best]:
                best = a
        policy[s, best] = 1.0
    return policy


def greedy_by_scatter(P, r, gamma, terminal, v):
    q = q_by_einsum(P, r, gamma, terminal, v)
    return torch.zeros_like(q).scatter_(1, q.argmax(dim=1, keepdim=True), 1.0)


def epsilon_greedy_by_loops(q, obs, epsilon):
    n_actions = q.shape[1]
    probabilities = torch.full((len(obs), n_actions), epsilon / n_actions)
    for i, state in enumerate(obs.tolist()):
        probabilities[i, int(q[state].argmax())] += 1.0 - epsilon
    return probabilities


def q_learning_by_where(q, step, next_action, gamma):
    next_value = q[step.next_obs].amax(dim=1)
    return step.reward + gamma * torch.where(step.terminated, 0.0, next_value)


def sarsa_by_gather(q, step, next_action, gamma):
    next_value = q[step.next_obs].gather(1, next_action.unsqueeze(1)).squeeze(1)
    return step.reward + gamma * (1.0 - step.terminated.float()) * next_value


def td_update_by_interpolation(q, obs, action, target, learning_rate):
    new_q = q.clone()
    new_q[obs, action] = (1 - learning_rate) * q[obs, action] + learning_rate * target
    return new_q


def td_update_by_loops(q, obs, action, target, learning_rate):
    new_q = q.clone()
    for s, a, y in zip(obs.tolist(), action.tolist(), target.tolist()):
        new_q[s, a] += learning_rate * (y - new_q[s, a])
    return new_q


MAZE_RIGHT_ANSWERS: list[tuple[str, Callable[..., Any]]] = [
    ("q_from_v", q_by_einsum),
    ("q_from_v", q_by_loops),
    ("policy_evaluation", evaluation_in_place),
    ("policy_evaluation", evaluation_by_a_linear_solve),
    ("policy_evaluation", evaluation_by_einsum),
    ("policy_evaluation", evaluation_by_loops_over_entries),
    ("value_iteration", iteration_in_place),
    ("value_iteration", iteration_in_place_in_reverse_order),
    ("value_iteration", iteration_by_einsum),
    ("value_iteration", iteration_counting_sweeps),
    ("greedy_policy", greedy_ties_split),
    ("greedy_policy", greedy_last_of_the_best),
    ("greedy_policy", greedy_by_scatter),
    ("epsilon_greedy", epsilon_greedy_by_loops),
    ("q_learning_target", q_learning_by_where),
    ("sarsa_target", sarsa_by_gather),
    ("td_update", td_update_by_interpolation),
    ("td_update", td_update_by_loops),
]


@pytest.mark.parametrize(
    ("name", "right"), MAZE_RIGHT_ANSWERS, ids=[right.__name__ for _, right in MAZE_RIGHT_ANSWERS]
)
def test_every_correct_form_of_a_maze_function_passes(
    name: str, right: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    passed, out = run_check(name, right, capsys)
    assert passed, out


def test_the_maze_cases_are_what_a_run_gives(reference: dict[str, Any]) -> None:
    # ties in greedy_policy, a tight max_sweeps, lr and 1 - lr apart, terminal and
    # truncated rows, and obs = next_obs wherever no episode ended (same-step reset)
    greedy = load_cases(checks.SPECS["greedy_policy"])
    tied = 0
    for case in greedy:
        scores = case["expected"]["scores"]
        tied += int(((scores >= scores.max(dim=1, keepdim=True).values - 1e-9).sum(1) > 1).sum())
    assert tied >= 4
    sweeps = [case["inputs"]["max_sweeps"] for case in load_cases(checks.SPECS["value_iteration"])]
    assert min(sweeps) <= 3 and all(case.limit for case in checks.SPECS["value_iteration"].cases)
    rates = [case["inputs"]["learning_rate"] for case in load_cases(checks.SPECS["td_update"])]
    assert all(abs(rate - 0.5) > 0.1 for rate in rates)
    rows = {"terminated": 0, "truncated": 0}
    for case in load_cases(checks.SPECS["q_learning_target"]):
        step = case["inputs"]["step"]
        ended = step["terminated"] | step["truncated"]
        assert torch.equal(step["obs"][~ended], step["next_obs"][~ended])
        assert not (step["obs"][ended] == step["next_obs"][ended]).any()
        rows = {flag: rows[flag] + int(step[flag].sum()) for flag in rows}
    assert min(rows.values()) >= 1


def test_every_check_has_at_least_three_wrong_answers() -> None:
    counts = {name: 0 for name in checks.SPECS}
    for name, _, _ in WRONG_ANSWERS:
        counts[name] += 1
    assert min(counts.values()) >= 3, counts


def test_a_gradient_mistake_is_reported_without_the_unrelated_value_hint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    passed, out = run_check("dqn_loss", dqn_loss_detached, capsys)
    assert not passed and "no gradient reaches q_network" in out and "Hint:" not in out
    passed, out = run_check("dqn_td_target", dqn_td_target_no_mask, capsys)
    assert not passed and "Hint: a terminal step" in out


@pytest.mark.parametrize(
    ("name", "wrong", "phrase"),
    NEWLY_NAMED,
    ids=[wrong.__name__ for _, wrong, _ in NEWLY_NAMED],
)
def test_a_mistake_the_values_alone_do_not_show_is_named_without_the_cases_hint(
    name: str, wrong: Callable[..., Any], phrase: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # (the case's hint is about another mistake: a shape, a clip or an alpha is to blame)
    passed, out = run_check(name, wrong, capsys)
    assert not passed and phrase in out and "Hint:" not in out, out


def _messages(spec: Any) -> list[str]:
    """Every text a check may show: the cases' hints, the probes' and the spec's messages."""
    return [
        *(case.hint for case in spec.cases),
        *(probe.message for probe in spec.probes),
        *spec.no_grad_messages.values(),
        *spec.grad_messages.values(),
        *spec.wrong_grad_messages.values(),
        *spec.changed_messages.values(),
        spec.sign_message,
    ]


@pytest.mark.parametrize("name", sorted(checks.SPECS))
def test_no_message_gives_the_code_of_the_answer(name: str) -> None:
    # the mistake is named, the code to write is not (the clip call, the successor's index)
    for message in _messages(checks.SPECS[name]):
        for code in ("torch.clamp", ".clamp(", "next_value[t]", "value[t + 1]", "F.mse_loss("):
            assert code not in message, (name, message)


def test_an_input_changed_in_place_is_named_even_when_the_result_is_right(
    reference: dict[str, Any],
) -> None:
    def gae_right_but_overwrites_next_value(reward, value, next_value, *rest):
        advantages = reference["gae"](reward, value, next_value, *rest)
        with torch.no_grad():
            next_value.zero_()
        return advantages

    with pytest.raises(CheckFailure, match=r"case 1/5 .* next_value was changed in place"):
        checks.check_gae(gae_right_but_overwrites_next_value)


def test_a_teacher_adds_a_practical_with_one_check_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a module beside the others, defining SPECS and its check; the reference in the source
    folder = tmp_path / "more_checks"
    folder.mkdir()
    (folder / "toy.py").write_text(
        textwrap.dedent(
            """
            from pathlib import Path

            from rl_mind.checks.engine import Case, Spec
            from rl_mind.checks.inputs import rand

            DOUBLE = Spec(
                "double",
                ("x",),
                (Case("a vector", "each value twice"),),
                lambda g, case: {"x": rand(g, 4)},
                "target",
                Path(__file__).with_suffix(".pt"),
            )
            SPECS = (DOUBLE,)


            def check_double(double):
                DOUBLE.check(double)
            """
        )
    )
    source = tmp_path / "toy.py"
    source.write_text(
        "# %%\nimport torch\n\n\n# %%\ndef double(x):\n"
        "    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n"
    )
    monkeypatch.setattr(checks, "__path__", [*checks.__path__, str(folder)])
    monkeypatch.delitem(sys.modules, "rl_mind.checks.toy", raising=False)
    try:
        (toy,) = [m for m in checks.practical_modules() if m.__name__ == "rl_mind.checks.toy"]
        assert references.regenerate([source], {"double": toy.DOUBLE}) == [folder / "toy.pt"]
        toy.check_double(lambda x: x + x)
        assert capsys.readouterr().out == "✓ double passes its case\n"
        with pytest.raises(
            CheckFailure, match=r"(?s)case 1/1 \(a vector\).*Hint: each value twice"
        ):
            toy.check_double(lambda x: 3 * x)
    finally:
        sys.modules.pop("rl_mind.checks.toy", None)


# ----------------------------------------------------------------------------- a teacher's check
TEACHER_SOURCE = """# %%
import torch

from rl_mind.checks import Case, Check, Probe


def spread(g, n, scale):
    return torch.randn(n, generator=g) * scale + 1.0


# %%
# the check of normalize, declared in the practical
check_normalize = Check(
    "normalize",
    cases=[
        Case("a batch of advantages", "subtract the mean, then divide by the standard deviation",
             lambda g: {"advantages": spread(g, 8, 3.0)}),
        Case("a larger batch", "every sample is normalized with the same mean and deviation",
             lambda g: {"advantages": spread(g, 32, 0.5)}),
    ],
    probes={
        "the mean is not subtracted": lambda advantages: advantages / advantages.std(),
        "the result changes when every advantage is doubled: divide by their standard "
        "deviation": Probe(
            lambda inputs: {"advantages": 2.0 * inputs["advantages"]},
            lambda result, doubled: not torch.allclose(result, doubled, atol=1e-4),
        ),
    },
    points=2,
)


# %%
def normalize(advantages):
    ### BEGIN SOLUTION the advantages with mean 0 and standard deviation 1
    return (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    ### END SOLUTION


# %%
check_normalize(normalize)
"""

# (answer name, its code, what the student must read)
TEACHER_ANSWERS = [
    ("right", "(a - a.mean()) / (a.std() + 1e-8)", "✓ normalize passes all 2 cases"),
    (
        "no mean",
        "a / a.std()",
        "case 1/2 (a batch of advantages) fails: the mean is not subtracted",
    ),
    ("not divided", "a - a.mean()", "fails: the result changes when every advantage is doubled"),
    ("too wide", "1.1 * (a - a.mean()) / a.std()", "Hint: subtract the mean, then divide by"),
    ("a shape", "(a - a.mean()).unsqueeze(1)", "expected shape [8], got [8, 1]"),
]

RUN_THE_STUDENT_NOTEBOOK = """
import json, sys
import nbformat
import rl_mind

notebook = nbformat.read(sys.argv[1], as_version=4)
imports, declaration, _gap, check = [c.source for c in notebook.cells if c.cell_type == "code"]
namespace = {}
# (the first cell's install line is a notebook magic: run as a script, as jupytext would)
exec("\\n".join(line for line in imports.split("\\n") if not line.startswith("%")), namespace)
exec(declaration, namespace)
results = {"package": rl_mind.__file__}
for name, code in json.loads(sys.argv[2]):
    exec(f"def normalize(a):\\n    return {code}", namespace)
    try:
        exec(check, namespace)
        results[name] = "passed"
    except AssertionError as failure:
        results[name] = str(failure)
print(json.dumps(results))
"""


def _student_notebook(tmp_path: Path) -> Path:
    """The student notebook of TEACHER_SOURCE, written into ``tmp_path``."""
    import nbformat

    from rl_mind.practicals import render_notebooks

    notebooks = render_notebooks(TEACHER_SOURCE, name="toy")
    code = [c.source for c in nbformat.reads(notebooks.student, 4).cells if c.cell_type == "code"]
    # the reference is not in the student notebook; the cases are, after the declaration
    assert "advantages.std() + 1e-8" not in notebooks.student
    assert code[1].startswith("# the check of normalize, declared in the practical\n")
    assert "\ncheck_normalize.load(  # its cases, computed from the reference" in code[1]
    assert code[3] == "check_normalize(normalize)"
    path = tmp_path / "toy.ipynb"
    path.write_text(notebooks.student)
    return path


def _run_the_student_notebook(python: str, path: Path, pythonpath: str) -> Path:
    """Run the check cell of the notebook ``path`` on every TEACHER_ANSWERS with ``python``
    (``pythonpath`` first on its path), check what the student reads; returns the folder of
    the ``rl_mind`` package it ran."""
    import json
    import os
    import subprocess

    answers = [(name, answer) for name, answer, _ in TEACHER_ANSWERS]
    done = subprocess.run(
        [python, "-c", RUN_THE_STUDENT_NOTEBOOK, str(path), json.dumps(answers)],
        env={**os.environ, "PYTHONPATH": pythonpath},
        cwd=path.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout.strip().split("\n")[-1])
    assert results["right"] == "passed" and "✓ normalize passes all 2 cases" in done.stdout
    for name, _, phrase in TEACHER_ANSWERS[1:]:
        assert results[name].startswith("normalize: case "), results[name]
        assert phrase in results[name], results[name]
    return Path(results["package"]).parent


def test_a_teacher_declares_a_check_in_the_source_and_the_student_notebook_runs_it(
    tmp_path: Path,
) -> None:
    import shutil

    path = _student_notebook(tmp_path)
    # the package without any file of case data: the notebook carries its cases
    package = tmp_path / "installed" / "rl_mind"
    root = Path(checks.__file__).parent.parent
    shutil.copytree(root, package, ignore=shutil.ignore_patterns("*.pt", "__pycache__"))
    assert not list(package.rglob("*.pt"))
    assert _run_the_student_notebook(sys.executable, path, str(package.parent)) == package


def _venv_seeing_this_interpreter(folder: Path, *, with_pip: bool = True) -> Path:
    """A fresh virtual environment at ``folder`` whose Python also sees every package of the
    interpreter running the tests; returns that Python.

    ``system_site_packages=True`` alone gives the *base* interpreter's packages: when pytest
    runs in a virtual environment (the README's set-up), its packages (nbformat, torch...)
    are not the base's. A ``.pth`` file puts this interpreter's site folders after the new
    environment's own, so that what is installed there wins."""
    import site
    import subprocess
    import venv

    venv.create(folder, system_site_packages=True, with_pip=with_pip)
    python = folder / "bin" / "python"
    own = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout.strip()  # fmt: skip
    ours = [*site.getsitepackages(), site.getusersitepackages()]
    Path(own, "_outer_interpreter.pth").write_text("\n".join(ours) + "\n")
    return python


def test_a_venv_made_by_a_test_sees_the_packages_of_the_python_running_the_tests(
    tmp_path: Path,
) -> None:
    # (pytest may run in the README's virtual environment, whose packages the base
    # interpreter has not: system_site_packages=True alone would not find nbformat there)
    import json
    import site
    import subprocess

    import nbformat

    python = _venv_seeing_this_interpreter(tmp_path / "venv", with_pip=False)
    script = "import json, sys, nbformat; print(json.dumps([sys.path, nbformat.__file__]))"
    done = subprocess.run([str(python), "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    path, found = json.loads(done.stdout)
    assert found == nbformat.__file__
    ours = [folder for folder in site.getsitepackages() if Path(folder).is_dir()]
    assert all(folder in path for folder in ours), (ours, path)
    own = [i for i, folder in enumerate(path) if folder.startswith(str(tmp_path / "venv"))]
    ours = [path.index(folder) for folder in ours]
    assert own and max(own) < min(ours), "what the new environment installs must win"


@pytest.mark.slow
def test_a_teacher_declared_check_runs_from_an_installed_wheel(tmp_path: Path) -> None:
    import subprocess

    pytest.importorskip("setuptools")  # (the build backend, for a build without a network)
    root = Path(__file__).parent.parent
    path = _student_notebook(tmp_path)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(root), "--no-deps", "--no-build-isolation",
         "-w", str(tmp_path / "dist")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("rl_mind-*.whl")
    python = str(_venv_seeing_this_interpreter(tmp_path / "venv"))
    installed = subprocess.run(
        [python, "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed",
         str(wheel)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    site = subprocess.run(
        [python, "-c", "import rl_mind, pathlib; print(pathlib.Path(rl_mind.__file__).parent)"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env={"PATH": "/usr/bin"},
    ).stdout.strip()  # fmt: skip
    for data in Path(site, "checks").glob("*.pt"):  # (none of them is needed)
        data.unlink()
    package = _run_the_student_notebook(python, path, "")
    assert package == Path(site) and (tmp_path / "venv") in package.parents


def test_a_declared_check_gets_its_points_in_the_nbgrader_assignment() -> None:
    import nbformat

    from rl_mind.practicals import render_nbgrader

    notebook = nbformat.reads(render_nbgrader(TEACHER_SOURCE, name="toy"), 4)
    graded = {
        cell.metadata.nbgrader.grade_id: cell.metadata.nbgrader.get("points")
        for cell in notebook.cells
        if cell.metadata.nbgrader.grade
    }
    assert graded == {"check_normalize": 2.0}


def test_the_declared_cases_are_the_same_each_time_and_follow_the_reference() -> None:
    from rl_mind.checks.teacher import declared_checks

    (first,) = declared_checks(TEACHER_SOURCE).values()
    (again,) = declared_checks(TEACHER_SOURCE).values()
    assert first[1] == again[1]
    (other,) = declared_checks(TEACHER_SOURCE.replace("+ 1e-8", "+ 1.0")).values()
    assert other[1] != first[1]


def test_a_declared_check_without_its_cases_says_where_they_come_from() -> None:
    check = checks.Check(
        "double", [checks.Case("a vector", "twice", lambda g: {"x": torch.randn(3, generator=g)})]
    )
    with pytest.raises(RuntimeError, match="check_double has no cases yet: `rl-mind practical`"):
        check(lambda x: 2 * x)
    encoded = check.generate(lambda x: 2 * x)
    check(lambda x: x + x)
    with pytest.raises(ValueError, match="not readable"):
        check.load(encoded[:-8] + "########")
    with pytest.raises(ValueError, match="1 stored cases for 2 declared"):
        checks.Check("double", [*check.cases, *check.cases]).load(encoded)
    with pytest.raises(ValueError, match=r"grad_inputs \['y'\] are not arguments of the"):
        checks.Check("double", check.cases, grad_inputs=("y",)).generate(lambda x: 2 * x)


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"function": "not a name"}, TypeError, "the gap function's name"),
        ({"cases": []}, TypeError, "non-empty list of Case"),
        ({"cases": [checks.Case("a", "b")]}, TypeError, "has no inputs"),
        ({"kind": "scalar"}, ValueError, "kind must be one of"),
        ({"kind": "losses"}, ValueError, "kind='losses' names two or more outputs"),
        ({"points": 0}, ValueError, "points must be a positive number, got 0"),
        ({"probes": {"": lambda x: x}}, TypeError, "a probe is named by its message"),
        ({"probes": {"a mistake": 3}}, TypeError, "must be a wrong answer"),
    ],
)
def test_a_check_declared_wrongly_is_refused_with_what_to_write(
    arguments: dict[str, Any], error: type[Exception], match: str
) -> None:
    given = {
        "function": "double",
        "cases": [checks.Case("a", "b", lambda g: {"x": torch.zeros(2)})],
        **arguments,
    }
    with pytest.raises(error, match=match):
        checks.Check(given.pop("function"), given.pop("cases"), **given)


def test_a_declaration_that_needs_the_rest_of_the_practical_is_an_error_saying_so() -> None:
    from rl_mind.practicals import render_notebooks

    text = TEACHER_SOURCE.replace("    points=2,\n", "    points=config.points,\n")
    with pytest.raises(ValueError, match=r"toy: .*the rest of the practical does not run.*"):
        render_notebooks(text, name="toy")
    # a case's inputs that need it: found when the cases are computed
    text = TEACHER_SOURCE.replace("spread(g, 8, 3.0)", "spread(g, config.n, 3.0)")
    with pytest.raises(ValueError, match=r"toy: .*does not run.*NameError: name 'config'"):
        render_notebooks(text, name="toy")


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        (
            'check_normalize = Check(\n    "normalize"',
            'check_normalise = Check(\n    "normalise"',
            "defines no function normalise",
        ),
        ("check_normalize = Check(", "normalize_check = Check(", "must be named check_normalize"),
        ("check_normalize = Check(", "check_normalize = other = Check(", "assign a Check to one"),
    ],
)
def test_a_declaration_the_generator_cannot_use_is_an_error_naming_its_line(
    old: str, new: str, match: str
) -> None:
    from rl_mind.practicals import render_notebooks

    assert old in TEACHER_SOURCE
    with pytest.raises(ValueError, match=rf"toy, line 13: .*{match}"):
        render_notebooks(TEACHER_SOURCE.replace(old, new), name="toy")


# the shipped practical whose check is declared in its source: REINFORCE's baseline loss
def _declared_in_the_notebook(name: str, function: str) -> Any:
    import nbformat

    path = Path(__file__).parent.parent / "notebooks" / f"{name}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    (cell,) = [c.source for c in notebook.cells if f"check_{function} = Check(" in c.source]
    namespace: dict[str, Any] = {}
    exec("import torch\nfrom rl_mind.checks import Case, Check, Probe\n" + cell, namespace)
    return namespace[f"check_{function}"]


BASELINE_LOSS_ANSWERS: list[tuple[Callable[..., Any], str]] = [
    (lambda values, returns: ((values - returns) ** 2).sum(), "10 times too large"),
    (lambda values, returns: (values - returns).abs().mean(), "grow four times"),
    (lambda values, returns: (values - returns).mean() ** 2, "shuffled"),
    (lambda values, returns: F.mse_loss(values.detach(), returns), "no gradient reaches values"),
    (lambda values, returns: 0.5 * F.mse_loss(values, returns), "factor 0.5"),
]


def test_the_reinforce_practical_declares_its_baseline_loss_check(
    reference: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    check = _declared_in_the_notebook("reinforce", "baseline_loss")
    assert "baseline_loss" not in checks.SPECS  # (not a check of the package)
    check(lambda values, returns: F.mse_loss(values, returns))
    assert capsys.readouterr().out == "✓ baseline_loss passes its case\n"
    for wrong, phrase in BASELINE_LOSS_ANSWERS:
        with pytest.raises(CheckFailure, match="baseline_loss: case 1/1") as info:
            check(wrong)
        assert phrase in str(info.value), str(info.value)


# ----------------------------------------------------------------------------- what a Check honours
def _vector(g: torch.Generator) -> torch.Tensor:
    return torch.randn(4, generator=g)


def test_a_probe_keeps_its_base_and_runs_only_on_its_cases(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def shift(x, y):
        return x + y

    cases = [
        checks.Case("x alone", "add y to x", lambda g: {"x": _vector(g), "y": torch.zeros(4)}),
        checks.Case(
            "x and y", "add y to x, each row", lambda g: {"x": _vector(g), "y": _vector(g)}
        ),
    ]
    probe = checks.Probe(
        lambda inputs: {**inputs, "y": inputs["y"] + 1.0},
        same_result_of_checks,
        base=lambda inputs: {**inputs, "x": torch.ones(4)},
        cases=("x and y",),
    )
    check = checks.Check("shift", cases, probes={"y is not added": probe})
    (kept,) = check.probes
    assert kept.base is probe.base and kept.cases == ("x and y",)
    check.generate(shift)
    check(lambda x, y: x + y)
    assert capsys.readouterr().out == "✓ shift passes all 2 cases\n"
    with pytest.raises(CheckFailure) as info:  # fails on case 2 only, where the probe runs
        check(lambda x, y: x + y[0])
    assert "case 2/2" in str(info.value) and "y is not added" not in str(info.value)
    with pytest.raises(CheckFailure, match=r"case 2/2 \(x and y\) fails: y is not added"):
        check(lambda x, y: x)
    with pytest.raises(CheckFailure, match=r"(?s)case 1/2 \(x alone\) fails: .*Hint: add y to x"):
        check(lambda x, y: 2 * x)  # (the probe is limited to case 2: case 1 gets its hint)


def same_result_of_checks(result: torch.Tensor, changed: torch.Tensor) -> bool:
    return bool(torch.allclose(result, changed))


def test_case_inputs_in_another_order_than_the_parameters_are_matched_by_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def scaled(x, scale):
        return x * scale

    case = checks.Case("a vector", "multiply", lambda g: {"scale": 3.0, "x": _vector(g)})
    check = checks.Check("scaled", [case], probes={"x is not scaled": lambda x, scale: x.clone()})
    check.generate(scaled)
    check(lambda x, scale: scale * x)
    assert capsys.readouterr().out == "✓ scaled passes its case\n"
    with pytest.raises(CheckFailure, match="x is not scaled"):
        check(lambda x, scale: x + 0.0)


def test_parameters_with_a_default_may_be_left_out_of_the_cases(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def scaled(x, scale=2.0, bias=0.0):
        return x * scale + bias

    given = checks.Case("scale given", "multiply", lambda g: {"scale": 3.0, "x": _vector(g)})
    check = checks.Check("scaled", [given])
    check.generate(scaled)
    check(lambda x, scale, bias=0.0: scale * x)
    assert capsys.readouterr().out == "✓ scaled passes its case\n"
    left_out = checks.Case("bias only", "add", lambda g: {"bias": 1.0, "x": _vector(g)})
    with pytest.raises(ValueError, match=r"takes \(x, scale, bias\).*missing \['scale'\]"):
        checks.Check("scaled", [left_out]).generate(scaled)


@pytest.mark.parametrize(
    ("inputs", "probes", "match"),
    [
        (
            lambda g: {"x": _vector(g)},
            {},
            r"gives the inputs \('x',\), but scaled takes \(x, scale\).*missing \['scale'\]",
        ),
        (
            lambda g: {"x": _vector(g), "scale": 2.0, "bias": 1.0},
            {},
            r"not parameters \['bias'\]",
        ),
        (
            lambda g: {"x": _vector(g), "scale": 2.0},
            {"a mistake": lambda x: x},
            r"the wrong answer 'a mistake' takes \(x\), but scaled takes \(x, scale\)",
        ),
        (
            lambda g: {"x": _vector(g), "scale": 2.0},
            {"a change": checks.Probe(lambda inputs: {"x": inputs["x"]}, same_result_of_checks)},
            r"the probe 'a change' must return the inputs by name, \('x', 'scale'\)",
        ),
    ],
)
def test_inputs_or_probes_that_do_not_match_the_parameters_are_refused(
    inputs: Callable[..., Any], probes: dict[str, Any], match: str
) -> None:
    def scaled(x, scale):
        return x * scale

    check = checks.Check("scaled", [checks.Case("a", "b", inputs)], probes=probes)
    with pytest.raises(ValueError, match=match):
        check.generate(scaled)


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (
            lambda: checks.Probe(lambda i: i, same_result_of_checks, base=3),
            TypeError,
            "base must be a function",
        ),
        (lambda: checks.Probe(3, same_result_of_checks), TypeError, "change must be a function"),
        (
            lambda: checks.Probe(lambda i: i, same_result_of_checks, bas=lambda i: i),
            TypeError,
            "unexpected keyword argument 'bas'",
        ),
        (
            lambda: checks.Probe(lambda i: i, same_result_of_checks, cases=(0,)),
            TypeError,
            "case numbers \\(1 for the first",
        ),
        (
            lambda: checks.Probe(lambda i: i, same_result_of_checks, cases=(-1000,)),
            TypeError,
            "case numbers \\(1 for the first",
        ),
        (
            lambda: checks.Check(
                "double",
                [checks.Case("a", "b", lambda g: {"x": torch.zeros(2)})],
                probes={"m": checks.Probe(lambda i: i, same_result_of_checks, cases=(2,))},
            ),
            ValueError,
            r"the probe 'm' runs on the cases \[2\], which are not declared",
        ),
        (
            lambda: checks.Check(
                "double",
                [checks.Case("a", "b", lambda g: {"x": torch.zeros(2)})],
                probes={"m": checks.Probe(lambda i: i, same_result_of_checks, "another")},
            ),
            ValueError,
            "has a message of its own",
        ),
        (
            lambda: checks.Check("double", [checks.Case("a", "b", lambda g: {})], base=lambda i: i),
            TypeError,
            "unexpected keyword argument 'base'",
        ),
        (lambda: checks.Case("a", "b", 3), TypeError, "inputs must be a function"),
        (lambda: checks.Limit(0), ValueError, "sweeps must be a positive int"),
    ],
)
def test_what_a_check_cannot_honour_is_refused_where_it_is_declared(
    build: Callable[[], Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        build()


def test_a_declared_case_with_a_limit_names_a_loop_that_does_not_converge() -> None:
    def fixed_point(x, tolerance):  # y <- x + y / 2, until it settles at 2 x
        y = torch.zeros_like(x)
        while True:
            new = x + y / 2
            if (new - y).abs().max() < tolerance:
                return new
            y = new

    case = checks.Case(
        "a vector",
        "each step adds x to half of the previous value",
        lambda g: {"x": _vector(g), "tolerance": 1e-6},
        limit=checks.Limit(200, over="x", seconds=5.0),
    )
    check = checks.Check("fixed_point", [case])
    check.generate(fixed_point)

    def never_settles(x, tolerance):
        y = torch.zeros_like(x)
        while True:
            new = x + y
            if (new - y).abs().max() < tolerance:
                return new
            y = new

    with pytest.raises(CheckFailure, match="does not converge within 200 sweeps"):
        check(never_settles)

    def copies_first(x, tolerance):  # (no torch operation: the time bounds it)
        values = x.tolist()
        while True:
            values = [value + 1.0 for value in values]

    quick = dataclasses.replace(case, limit=checks.Limit(200, over="x", seconds=1.0))
    timed = checks.Check("fixed_point", [quick])
    timed.generate(fixed_point)
    with pytest.raises(CheckFailure, match=r"still running after 1 s"):
        timed(copies_first)


def test_a_check_called_before_its_declaration_is_refused_by_the_generator_and_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rl_mind.practicals import main, render_notebooks

    declaration = TEACHER_SOURCE[TEACHER_SOURCE.index("# %%\n# the check of normalize") :]
    declaration = declaration[: declaration.index("# %%\ndef normalize")]
    late = TEACHER_SOURCE.replace(declaration, "") + "\n\n" + declaration
    with pytest.raises(ValueError, match=r"check_normalize\(normalize\) is called here, but "):
        render_notebooks(late, name="toy")
    source = tmp_path / "src" / "toy.py"
    source.parent.mkdir()
    source.write_text(late)
    for flags in ([], ["--check"]):
        assert main([*flags, str(source)]) == 1
        assert "declared after it" in capsys.readouterr().err


def test_the_load_line_follows_its_declaration() -> None:
    import nbformat

    from rl_mind.practicals import render_notebooks

    text = TEACHER_SOURCE.replace(
        "    points=2,\n)\n", "    points=2,\n)\nprint(check_normalize)\n"
    )
    notebook = nbformat.reads(render_notebooks(text, name="toy").student, 4)
    (cell,) = [c.source for c in notebook.cells if "check_normalize = Check(" in c.source]
    declaration_end = cell.index("    points=2,\n)\n") + len("    points=2,\n)\n")
    assert cell[declaration_end:].startswith("check_normalize.load(")
    assert cell.rstrip().endswith("print(check_normalize)")


# ----------------------------------------------------------------------------- the guide says what the code does
GUIDE = Path(__file__).parent.parent / "docs" / "guide"


def test_the_guide_quotes_the_check_lines_as_they_are_printed(
    reference: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    import re

    checks.check_gae(reference["gae"])
    checks.check_ppo_value_loss(reference["ppo_value_loss"])
    printed = capsys.readouterr().out.split("\n")[:2]
    pattern = r"✓ (\S+) passes (all (\S+) cases|its case)"
    assert all(re.fullmatch(pattern, line) for line in printed), printed
    quoted = []
    for page in ("practicals.md", "checks.md", "teachers.md", "maze.md"):
        quoted += re.findall(r"✓ [^`\"\n\\]*", (GUIDE / page).read_text(encoding="utf-8"))
    quoted = [line.strip() for line in quoted if "pass" in line]
    assert len(quoted) >= 3
    for line in quoted:  # (a placeholder such as <function> or N stands for a word)
        assert re.fullmatch(pattern, line), line
    # a failing check's ✗: what print shows has none; the notebook marks the first line
    checks_page = (GUIDE / "checks.md").read_text(encoding="utf-8")
    assert "# ✗" not in checks_page


def test_the_teachers_page_covers_every_option_of_rl_mind_practical() -> None:
    from rl_mind.practicals.cli import _parser

    page = (GUIDE / "teachers.md").read_text(encoding="utf-8")
    options = [o for a in _parser()._actions for o in a.option_strings if o.startswith("--")]
    assert {"--check", "--nbgrader", "--reference"} <= set(options)
    for option in options:
        assert f"`{option}" in page or option == "--help", option
    for step in ("nbgrader generate_assignment", "nbgrader autograde", "--execute", "Check("):
        assert step in page, step


def test_a_probe_the_check_cannot_honour_is_refused_by_rl_mind_practical_naming_its_line() -> None:
    from rl_mind.practicals import render_notebooks

    wrong = TEACHER_SOURCE.replace(
        "            lambda result, doubled: not torch.allclose(result, doubled, atol=1e-4),\n",
        "            lambda result, doubled: not torch.allclose(result, doubled, atol=1e-4),\n"
        "            cases=(3,),\n",
    )
    assert wrong != TEACHER_SOURCE
    with pytest.raises(ValueError, match=r"toy, line 13: .*runs on the cases \[3\], which are not"):
        render_notebooks(wrong, name="toy")
    late_base = TEACHER_SOURCE.replace(
        "            lambda result, doubled: not torch.allclose(result, doubled, atol=1e-4),\n",
        "            lambda result, doubled: not torch.allclose(result, doubled, atol=1e-4),\n"
        "            base=lambda inputs: {'x': inputs['advantages']},\n",
    )
    with pytest.raises(ValueError, match=r"toy, line 13: .*must return the inputs by name"):
        render_notebooks(late_base, name="toy")
