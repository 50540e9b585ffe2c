"""rl_mind.env: VecEnv spaces and properties, seeding, lifetime, the two auto-reset modes,
Dict observations, and bad actions (a clear error, and the environment state is kept)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.wrappers import RecordEpisodeStatistics, TimeLimit
from hypothesis import given, settings
from hypothesis import strategies as st

from rl_mind.core import Action, TensorStruct
from rl_mind.env import EnvStep, VecEnv
from tests.toy_envs import (
    COUNTER_ID,
    FLAG_RUNNING,
    FLAG_TERMINATED,
    FLAG_TRUNCATED,
    CounterActor,
    decode,
)

OBS_KINDS = ["box", "discrete", "dict"]


def counter(num_envs: int = 3, obs_kind: str = "box", **kwargs) -> VecEnv:
    return VecEnv(COUNTER_ID, num_envs, seed=kwargs.pop("seed", 10), obs_kind=obs_kind, **kwargs)


# ---------------------------------------------------------------------- spaces and properties
def test_box_observations_and_discrete_actions():
    with counter(3) as env:
        assert env.num_envs == 3 and env.env_name == COUNTER_ID
        assert env.observation_dim == 4 and env.n_actions == 3 and not env.is_continuous
        assert isinstance(env.observation_space, spaces.Box) and env.observation_space.shape == (4,)
        assert env.action_space == spaces.Discrete(3)  # one copy's space
        assert env.same_step_reset is False and env.device == torch.device("cpu")
        with pytest.raises(TypeError, match="Box action spaces.*use n_actions"):
            _ = env.action_dim
        with pytest.raises(TypeError, match="Discrete observation spaces"):
            _ = env.n_states
        obs = env.reset()
        assert obs.shape == (3, 4) and obs.dtype == torch.float32
        step = env.step(torch.zeros(3, dtype=torch.long))
        assert isinstance(step, EnvStep)
        assert step.reward.shape == (3,) and step.reward.dtype == torch.float32
        assert step.terminated.dtype == torch.bool and step.truncated.dtype == torch.bool
        assert step.autoreset.dtype == torch.bool and step.autoreset.shape == (3,)
        assert torch.equal(step.done, step.terminated | step.truncated)
        assert env.gym_env.num_envs == 3
        assert type(env.gym_unwrapped[0]).__name__ == "CounterEnv"


def test_gym_unwrapped_is_every_copy_and_its_attributes_are_copy_0_s():
    # 0.4 returned the copies' unwrapped environments (env.gym_unwrapped[i]); since, the
    # attributes of copy 0 are read straight from it (env.gym_unwrapped.obs_kind)
    with counter(3, "dict") as env:
        copies = env.gym_unwrapped
        assert len(copies) == 3 and [type(c).__name__ for c in copies] == ["CounterEnv"] * 3
        assert copies[2] is env.gym_env.envs[2].unwrapped and copies[0] is not copies[1]
        assert copies.obs_kind == "dict" and copies.max_len == copies[0].max_len
        with pytest.raises(AttributeError, match="no_such_attribute"):
            _ = copies.no_such_attribute
    with VecEnv("CartPole-v1", 2) as env:  # natively vectorized: the vector environment
        assert env.gym_unwrapped is env.gym_env.unwrapped


def test_discrete_observations_are_long_state_indices():
    with counter(2, "discrete") as env:
        assert env.n_states == 10**12
        with pytest.raises(TypeError, match="use n_states"):
            _ = env.observation_dim
        obs = env.reset()
        assert obs.shape == (2,) and obs.dtype == torch.long
        assert decode(obs).tolist() == [[10, 0, 0, 0], [11, 0, 0, 0]]


def test_dict_observations_are_a_tensor_struct_with_one_field_per_key():
    with counter(2, "dict") as env:
        obs = env.reset()
        assert isinstance(obs, TensorStruct) and len(obs) == 2
        assert obs.where.shape == (2, 2) and obs.where.dtype == torch.float32  # type: ignore[attr-defined]
        assert obs.step.shape == (2,) and obs.step.dtype == torch.long  # type: ignore[attr-defined]
        assert obs.flag.dtype == torch.long  # type: ignore[attr-defined]
        step = env.step(torch.zeros(2, dtype=torch.long))
        assert type(step.obs) is type(obs) and type(step.next_obs) is type(obs)
        assert step.obs.step.tolist() == [1, 1]  # type: ignore[union-attr]
        with pytest.raises(TypeError, match="Box observation spaces"):
            _ = env.observation_dim


def test_continuous_actions():
    with counter(2, action_kind="box", same_step_reset=True) as env:  # no reset rows
        assert env.is_continuous and env.action_dim == 2
        with pytest.raises(TypeError, match="use action_dim"):
            _ = env.n_actions
        env.reset()
        step = env.step(torch.tensor([[0.25, 0.5], [-1.0, 0.0]]))
        assert step.reward.tolist() == [0.75, -1.0]
        # float64 actions are converted, gradients never reach the environment
        grad = torch.full((2, 2), 0.5, dtype=torch.float64, requires_grad=True)
        assert env.step(grad * 1).reward.tolist() == [1.0, 1.0]


def test_cartpole_native_vectorization_in_next_step_mode_and_sync_in_same_step_mode():
    with VecEnv("CartPole-v1", 4, seed=0) as env:
        assert env.vectorization_mode == "vector_entry_point"
        assert env.observation_dim == 4 and env.n_actions == 2
        obs = env.reset()
        assert obs.shape == (4, 4) and obs.dtype == torch.float32
        step = env.step(torch.ones(4, dtype=torch.long))
        assert step.reward.tolist() == [1.0] * 4
    with VecEnv("CartPole-v1", 4, seed=0) as again:
        assert torch.equal(again.reset(), obs)  # seeded: reproducible
    with VecEnv("CartPole-v1", 4, seed=0, same_step_reset=True) as same:
        # the native CartPole only does next-step: same-step falls back to sync
        assert same.vectorization_mode == "sync" and same.same_step_reset
        assert same.reset().shape == (4, 4)
    with VecEnv("CartPole-v1", 4, wrappers=[lambda e: e]) as wrapped:
        assert wrapped.vectorization_mode == "sync"  # wrappers need one env per copy


def test_native_cartpole_next_step_autoreset_rows():
    with VecEnv("CartPole-v1", 2, seed=1) as env:
        env.reset()
        previous_done = torch.zeros(2, dtype=torch.bool)
        for _ in range(200):
            step = env.step(torch.ones(2, dtype=torch.long))  # always push right: falls fast
            assert torch.equal(step.autoreset, previous_done)
            if step.autoreset.any():
                assert (step.reward[step.autoreset] == 0).all()
                assert not step.done[step.autoreset].any()
                # a fresh CartPole starts within +-0.05
                assert (step.obs[step.autoreset].abs() <= 0.05).all()
                break
            previous_done = step.done.clone()
        assert step.autoreset.any()


def test_unknown_environment_id_names_the_close_match():
    with pytest.raises(ValueError, match=r"unknown environment id 'CartPol-v1'.*CartPole"):
        VecEnv("CartPol-v1", 2)


@pytest.mark.parametrize("num_envs", [0, -1, 1.5, True])
def test_num_envs_must_be_a_positive_int(num_envs):
    with pytest.raises(ValueError, match="num_envs must be a positive int"):
        VecEnv("CartPole-v1", num_envs)


# ---------------------------------------------------------------------- seeding, lifetime, device
def rollout_codes(env: VecEnv, n: int, reset_seed: int | None = None) -> list[list[list[int]]]:
    actor = CounterActor()
    obs = env.reset(seed=reset_seed)
    codes = [decode(obs).tolist()]
    for _ in range(n):
        step = env.step(actor(obs))
        obs = step.obs
        codes.append(decode(step.next_obs).tolist() + decode(obs).tolist())
    return codes


def test_the_same_seed_gives_the_same_run_and_copies_get_seed_plus_i():
    with counter(3, seed=7) as a, counter(3, seed=7) as b, counter(3, seed=8) as c:
        run_a = rollout_codes(a, 30)
        assert run_a == rollout_codes(b, 30)
        assert run_a != rollout_codes(c, 30)
        assert [row[0] for row in run_a[0]] == [7, 8, 9]  # copy i seeded with seed + i
        # an explicit reset seed replays exactly; a later unseeded reset does not re-seed
        assert rollout_codes(a, 20, reset_seed=3) == rollout_codes(b, 20, reset_seed=3)
        assert a.reset().tolist() != a.reset(seed=3).tolist()


def test_close_is_idempotent_and_a_closed_env_refuses_to_step():
    env = counter(2)
    with env:
        with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
            env.step(torch.zeros(2, dtype=torch.long))
        env.reset()
    with pytest.raises(RuntimeError, match="closed"):
        env.step(torch.zeros(2, dtype=torch.long))
    with pytest.raises(RuntimeError, match="closed"):
        env.reset()
    env.close()  # idempotent
    assert "next-step" in repr(env)


def test_device_argument_puts_every_tensor_there():
    with counter(2, "dict", device="cpu", same_step_reset=True) as env:
        assert env.device == torch.device("cpu")
        obs = env.reset()
        step = env.step(Action(torch.zeros(2, dtype=torch.long)))  # an Action is accepted
        assert obs.device == step.device == torch.device("cpu")
        assert all(t.device == torch.device("cpu") for t in step.tensors())


@pytest.mark.parametrize(
    ("device", "error", "message"),
    [
        ("cuda:99", ValueError, r"VecEnv: device 'cuda:99' is not available"),
        ("gpu", ValueError, r"VecEnv: device 'gpu' is not a torch device"),
        (2.5, TypeError, r"VecEnv: device must be a torch.device or a string"),
    ],
)
def test_a_device_this_machine_lacks_is_refused_at_construction(device, error, message):
    # (torch alone fails only at the first tensor put there: an AssertionError on a
    # CPU-only build)
    with pytest.raises(error, match=message):
        VecEnv("CartPole-v1", 2, device=device)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_on_a_machine_without_a_gpu_says_so_and_how_to_pick_the_device():
    with pytest.raises(ValueError, match=r"no CUDA GPU.*'cuda' if torch.cuda.is_available\(\)"):
        VecEnv("CartPole-v1", 2, device="cuda")


@pytest.fixture
def no_environment_built(monkeypatch):
    """Fails the test if a VecEnv gets as far as building its gymnasium environment."""

    def refuse(*args, **kwargs):
        raise AssertionError("an environment was built before the arguments were checked")

    monkeypatch.setattr("rl_mind.env.gym.make_vec", refuse)


@pytest.mark.parametrize(
    ("seed", "error"),
    [(-1, ValueError), ("a", TypeError), (1.5, TypeError), (True, TypeError), ([1], TypeError)],
)
def test_a_bad_seed_is_refused_before_any_environment_is_built(seed, error, no_environment_built):
    with pytest.raises(
        error, match=re.escape(f"VecEnv: seed must be None or an int >= 0, got {seed!r}")
    ):
        VecEnv("CartPole-v1", 2, seed=seed)


def test_a_bad_reset_seed_is_refused_and_the_episode_continues():
    with counter(2) as env:
        obs = env.reset()
        for seed, error in ((-1, ValueError), ("a", TypeError), (2.0, TypeError)):
            with pytest.raises(error, match=r"VecEnv.reset: seed must be None or an int >= 0"):
                env.reset(seed=seed)
        step = env.step(torch.tensor([0, 1]))  # the same episodes, one step further
        assert torch.equal(decode(step.next_obs)[:, 2], decode(obs)[:, 2] + 1)
        assert torch.equal(decode(step.next_obs)[:, 1], decode(obs)[:, 1])


def test_numpy_and_large_int_seeds_are_seeds():
    # (gymnasium takes any int >= 0, however large)
    with counter(2, seed=np.int64(7)) as a, counter(2, seed=7) as b:
        assert rollout_codes(a, 10) == rollout_codes(b, 10)
        assert a.reset(seed=np.uint32(3)).tolist() == b.reset(seed=3).tolist()
    with counter(2, seed=10**23) as env, VecEnv("CartPole-v1", 2, seed=10**23) as cartpole:
        assert env.reset().shape == (2, 4) and cartpole.reset().shape == (2, 4)


@pytest.mark.parametrize(
    ("wrappers", "message"),
    [
        (None, r"wrappers must be a list or tuple of wrapper constructors.*got NoneType; use \(\)"),
        (TimeLimit, r"got TimeLimit alone; wrap it in a list: wrappers=\[TimeLimit\]"),
        ((5,), r"wrappers\[0\] is 5 \(int\), expected a wrapper constructor"),
        ("TimeLimit", r"wrappers must be a list or tuple.*got str"),
    ],
)
def test_bad_wrappers_say_what_to_pass_before_any_environment_is_built(
    wrappers, message, no_environment_built
):
    with pytest.raises(TypeError, match=message):
        VecEnv("CartPole-v1", 2, wrappers=wrappers)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_wrapper_that_returns_no_environment_is_named(asynchronous):
    def forgets_to_return(env):
        TimeLimit(env, 5)  # (the wrapped environment is not returned)

    with pytest.raises(TypeError, match=r"wrappers\[1\] returned a NoneType, expected the wrapped"):
        VecEnv(
            COUNTER_ID,
            2,
            wrappers=[RecordEpisodeStatistics, forgets_to_return],
            asynchronous=asynchronous,
        )
    with VecEnv(COUNTER_ID, 2, wrappers=[lambda env: TimeLimit(env, 5)]) as env:  # a good one
        assert env.reset().shape == (2, 4) and len(env.wrappers) == 1


# ---------------------------------------------------------------------- auto-reset modes
def check_auto_reset_semantics(env: VecEnv, n_steps: int) -> tuple[int, int]:
    """Step with the counter actor and check every row; returns (#terminated, #truncated)."""
    actor = CounterActor()
    obs = env.reset()
    previous_done = torch.zeros(env.num_envs, dtype=torch.bool)
    n_terminated = n_truncated = 0
    for _ in range(n_steps):
        code = decode(obs)
        step = env.step(actor(obs))
        obs_code, next_code = decode(step.obs), decode(step.next_obs)
        if env.same_step_reset:
            assert not step.autoreset.any()
            acted = torch.ones(env.num_envs, dtype=torch.bool)
        else:
            assert torch.equal(step.autoreset, previous_done)
            assert torch.equal(obs_code, next_code)  # next-step: obs is next_obs
            acted = ~step.autoreset
            # the reset row ignored its action: a new episode, no reward, not done
            reset = step.autoreset
            assert (obs_code[reset, 1] == code[reset, 1] + 1).all()
            assert (obs_code[reset, 2] == 0).all() and (obs_code[reset, 3] == FLAG_RUNNING).all()
            assert (step.reward[reset] == 0).all() and not step.done[reset].any()
        # next_obs is the true successor of the observation acted on
        assert torch.equal(next_code[acted, :2], code[acted, :2])
        assert torch.equal(next_code[acted, 2], code[acted, 2] + 1)
        assert torch.equal(step.reward[acted], (actor(obs).value[acted] + 1).float())
        # terminated / truncated are where the environment put them
        assert torch.equal(step.terminated, acted & (next_code[:, 3] == FLAG_TERMINATED))
        assert torch.equal(step.truncated, acted & (next_code[:, 3] == FLAG_TRUNCATED))
        if env.same_step_reset:
            done = step.done
            # the ending step already returns the first observation of the next episode
            assert (obs_code[done, 1] == code[done, 1] + 1).all()
            assert (obs_code[done, 2] == 0).all()
            assert torch.equal(obs_code[~done], next_code[~done])
        n_terminated += int(step.terminated.sum())
        n_truncated += int(step.truncated.sum())
        previous_done = step.done.clone()
        obs = step.obs
    return n_terminated, n_truncated


@pytest.mark.parametrize("same_step_reset", [False, True], ids=["next-step", "same-step"])
@pytest.mark.parametrize("obs_kind", OBS_KINDS)
def test_auto_reset_semantics_sync(obs_kind, same_step_reset):
    with counter(3, obs_kind, same_step_reset=same_step_reset) as env:
        assert env.vectorization_mode == "sync"
        n_terminated, n_truncated = check_auto_reset_semantics(env, 40)
    assert n_terminated > 3 and n_truncated > 3  # both kinds of ending were exercised


@pytest.mark.parametrize(
    ("obs_kind", "same_step_reset"), [("box", False), ("dict", True)], ids=["box-next", "dict-same"]
)
def test_auto_reset_semantics_async(obs_kind, same_step_reset):
    with counter(2, obs_kind, same_step_reset=same_step_reset, asynchronous=True) as env:
        assert env.vectorization_mode == "async"
        n_terminated, n_truncated = check_auto_reset_semantics(env, 25)
    assert n_terminated > 0 and n_truncated > 0


@pytest.mark.parametrize(
    ("obs_kind", "asynchronous"),
    [("box", False), ("dict", False), ("box", True)],
    ids=["box-sync", "dict-sync", "box-async"],
)
def test_observations_stay_as_returned_after_later_steps(obs_kind, asynchronous):
    # gymnasium's sync and async environments are built with copy=False (they rewrite one
    # observation buffer): what the VecEnv returns (and the collectors keep) must not
    # change with the next steps
    with counter(2, obs_kind, asynchronous=asynchronous) as env:
        assert env.gym_env.copy is False
        returned = [env.reset()]
        snapshots = [decode(returned[0]).clone()]  # (as returned)
        for _ in range(8):
            step = env.step(torch.ones(2, dtype=torch.long))
            returned += [step.obs, step.next_obs]
            snapshots += [decode(step.obs).clone(), decode(step.next_obs).clone()]
    for obs, snapshot in zip(returned, snapshots):
        assert torch.equal(decode(obs), snapshot)
    assert any(  # (the steps did change the observations)
        not torch.equal(snapshots[0], snapshot) for snapshot in snapshots[1:]
    )


# ---------------------------------------------------------------------- bad actions
def test_bad_discrete_actions_are_refused_and_the_episode_continues():
    with counter(2) as env:
        obs = env.reset()
        long = torch.long
        bad = [
            (torch.zeros(3, dtype=long), r"shape \[2\] \(\[num_envs\]\), got \[3\]"),
            (torch.zeros(2, 1, dtype=long), r"got \[2, 1\] \(squeeze the last dimension\)"),
            (torch.tensor([0, 3]), r"must lie in \[0, 2\], got \[0, 3\]"),
            (torch.tensor([-1, 0]), r"must lie in \[0, 2\]"),
            (torch.tensor([0.0, 1.0]), r"integer discrete actions.*float32.*actions.long\(\)"),
            (torch.tensor([0.5, 1.0]), "integer discrete actions"),
            (torch.tensor([True, False]), "integer discrete actions.*bool"),
            # (a dtype numpy lacks)
            (torch.tensor([0, 1], dtype=torch.bfloat16), "integer discrete actions.*bfloat16"),
        ]
        for actions, message in bad:
            with pytest.raises(ValueError, match=message):
                env.step(actions)
        with pytest.raises(TypeError, match="tensor of actions or an Action, got list"):
            env.step([0, 1])  # type: ignore[arg-type]
        with warnings.catch_warnings():  # (torch: "ComplexHalf support is experimental")
            warnings.simplefilter("ignore", UserWarning)
            complex_half = torch.zeros(2, dtype=torch.complex32)
        with pytest.raises(TypeError, match="integer or floating-point actions, got .*complex32"):
            env.step(complex_half)
        # nothing reached the environment: the next valid step continues the same episode
        step = env.step(torch.tensor([0, 1]))
        assert torch.equal(decode(step.next_obs)[:, 2], decode(obs)[:, 2] + 1)
        assert torch.equal(decode(step.next_obs)[:, 1], decode(obs)[:, 1])


@pytest.mark.parametrize("num_envs", [2, 200])
@pytest.mark.parametrize("start", [0, -1])
@pytest.mark.parametrize("check", ["lookup", "comparison"])
def test_the_discrete_range_check_at_every_size_start_and_integer_dtype(num_envs, start, check):
    with counter(num_envs, action_start=start) as env:
        assert env.action_space == spaces.Discrete(3, start=start)
        if check == "comparison":  # the path of action spaces too large for a lookup set
            env._action_values = None
        env.reset()
        for dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8):
            low = max(start, 0) if dtype == torch.uint8 else start
            for value in range(low, start + 3):
                env.step(torch.full((num_envs,), value, dtype=dtype))
            for value in (start - 1, start + 3):
                if dtype == torch.uint8 and value < 0:
                    continue
                actions = torch.full((num_envs,), low, dtype=dtype)  # (valid but one)
                actions[num_envs // 2] = value
                # (many actions: the message shows the wrong ones, with their rows)
                got = (
                    rf"\[.*{value}.*\]"
                    if num_envs <= 16
                    else rf"{value} \(row {num_envs // 2}\), among {num_envs} actions"
                )
                with pytest.raises(
                    ValueError, match=rf"must lie in \[{start}, {start + 2}\], got {got}$"
                ):
                    env.step(actions)


def test_bad_continuous_actions_are_refused_and_the_episode_continues():
    with counter(2, action_kind="box") as env:
        obs = env.reset()
        bad = [
            (torch.zeros(2), r"shape \[2, 2\] \(\[num_envs, action_dim\]\), got \[2\]"),
            (torch.zeros(3, 2), r"shape \[2, 2\].*got \[3, 2\]"),
            (torch.zeros(2, 3), r"got \[2, 3\]"),
            (torch.tensor([[0.0, float("nan")], [0.0, 0.0]]), r"finite.*rows \[0\]"),
            (torch.tensor([[0.0, 0.0], [float("inf"), 0.0]]), r"finite.*rows \[1\]"),
            (torch.zeros(2, 2, dtype=torch.long), "floating-point continuous actions"),
        ]
        for actions, message in bad:
            with pytest.raises(ValueError, match=message):
                env.step(actions)
        with pytest.raises(ValueError, match=r"finite.*rows \[0\]"):  # (a dtype numpy lacks)
            env.step(torch.tensor([[float("nan"), 0.0], [0.0, 0.0]], dtype=torch.bfloat16))
        # (converted to float32: a valid step)
        step = env.step(torch.zeros(2, 2, dtype=torch.bfloat16))
        assert torch.equal(decode(step.next_obs)[:, 2], decode(obs)[:, 2] + 1)
        assert torch.equal(decode(step.next_obs)[:, 1], decode(obs)[:, 1])


def test_a_one_dimensional_continuous_action_must_keep_its_last_dim():
    import rl_mind.envs  # noqa: F401  (registers CartPoleContinuous-v1)

    with VecEnv("CartPoleContinuous-v1", 2, seed=0) as env:
        env.reset()
        with pytest.raises(ValueError, match=r"got \[2\].*unsqueeze\(-1\)"):
            env.step(torch.zeros(2))
        env.step(torch.zeros(2, 1))


def test_float64_actions_beyond_the_space_s_float32_are_refused_before_any_copy_steps():
    with counter(2, action_kind="box") as env, warnings.catch_warnings():
        warnings.simplefilter("error")  # (no numpy overflow warning either)
        obs = env.reset()
        huge = torch.tensor([[0.0, 0.0], [1e39, 0.0]], dtype=torch.float64)
        with pytest.raises(
            ValueError,
            match=r"must fit the action space's dtype float32 \(\|a\| <= 3.403e\+38\), "
            r"got \[\[0.0, 0.0\], \[1e\+39, 0.0\]\]",
        ):
            env.step(huge)
        with pytest.raises(ValueError, match="must fit"):
            env.step(-huge)
        step = env.step(torch.full((2, 2), 0.5, dtype=torch.float64))  # within range: fine
        assert step.reward.tolist() == [1.0, 1.0]
        assert torch.equal(decode(step.next_obs)[:, 2], decode(obs)[:, 2] + 1)


@pytest.mark.parametrize("action_kind", ["discrete", "box"])
def test_actions_on_the_meta_device_are_refused_with_a_clear_error(action_kind):
    with counter(2, action_kind=action_kind) as env:
        env.reset()
        shape = (2,) if action_kind == "discrete" else (2, 2)
        dtype = torch.long if action_kind == "discrete" else torch.float32
        meta = torch.zeros(shape, dtype=dtype, device="meta")
        for actions in (meta, Action(meta)):
            with pytest.raises(ValueError, match="actions are on the meta device, which holds no"):
                env.step(actions)
        env.step(torch.zeros(shape, dtype=dtype))


def bad_actions(action_kind: str, num_envs: int) -> list[tuple[object, type[Exception]]]:
    """One bad action of each kind, with the error it must raise."""
    if action_kind == "discrete":
        good = torch.zeros(num_envs, dtype=torch.long)
        out_of_range = good.clone()
        out_of_range[-1] = 3
        return [
            (good[:-1], ValueError),
            (good[:, None], ValueError),
            (out_of_range, ValueError),
            (good - 1, ValueError),
            (good.float(), ValueError),
            (good.bool(), ValueError),
            (good.to("meta"), ValueError),
            (good.tolist(), TypeError),
        ]
    good = torch.zeros(num_envs, 2)
    nan, huge = good.clone(), good.double()
    nan[-1, 0] = float("nan")
    huge[-1, 1] = 1e300
    return [
        (good[:, 0], ValueError),
        (good[:-1], ValueError),
        (nan, ValueError),
        (huge, ValueError),
        (good.long(), ValueError),
        (good.to("meta"), ValueError),
        (good.tolist(), TypeError),
    ]


@settings(max_examples=50, deadline=None)
@given(
    action_kind=st.sampled_from(["discrete", "box"]),
    same_step_reset=st.booleans(),
    num_envs=st.integers(1, 4),
    before=st.integers(0, 8),
    after=st.integers(1, 8),
    data=st.data(),
)
def test_a_rejected_step_leaves_the_environment_as_a_fresh_one_that_never_saw_it(
    action_kind, same_step_reset, num_envs, before, after, data
):
    """A rejected action, then the same valid actions: the same steps as without it."""
    if action_kind == "discrete":
        one_action = st.integers(0, 2)
    else:
        one_action = st.lists(st.floats(-1, 1, width=32), min_size=2, max_size=2)
    actions_of_all = st.lists(one_action, min_size=num_envs, max_size=num_envs).map(torch.tensor)
    sequence = [data.draw(actions_of_all) for _ in range(before + after)]
    bad, error = data.draw(st.sampled_from(bad_actions(action_kind, num_envs)))
    kwargs = {"action_kind": action_kind, "same_step_reset": same_step_reset, "seed": 5}
    with counter(num_envs, **kwargs) as tried, counter(num_envs, **kwargs) as fresh:
        assert torch.equal(tried.reset(), fresh.reset())
        for t, actions in enumerate(sequence):
            if t == before:
                with pytest.raises(error):
                    tried.step(bad)  # type: ignore[arg-type]
            got, want = tried.step(actions), fresh.step(actions)
            for u, v in zip(got.tensors(), want.tensors()):
                assert torch.equal(u, v)
