"""rl_mind.data: ReplayBuffer against a list model of a ring, Episode, Rollout, minibatches."""

from __future__ import annotations

import dataclasses
import operator

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from torch import Tensor

from rl_mind.core import Action, StochasticAction, TensorStruct, unbatched
from rl_mind.data import Episode, ReplayBuffer, Rollout, Transitions, minibatches

SETTINGS = settings(max_examples=50, deadline=None)


@dataclasses.dataclass(frozen=True)
class DictObs(TensorStruct):
    position: Tensor  # [N, 2] float
    cell: Tensor  # [N] long


def transitions(ids: list[int], obs_dim: int = 3) -> Transitions[StochasticAction]:
    """One transition per id, every field derived from the id (so a row is recognisable)."""
    i = torch.tensor(ids, dtype=torch.long)
    obs = i[:, None].float().expand(-1, obs_dim).clone()
    return Transitions(
        obs=obs,
        action=StochasticAction(i % 5, -i.float()),
        reward=i.float(),
        next_obs=obs + 1,
        terminated=i % 2 == 0,
    )


def ids_of(batch: Transitions[StochasticAction]) -> list[int]:
    """The ids of the rows, after checking that every row is consistent with its id."""
    i = batch.reward.long()
    assert torch.equal(batch.obs, i[:, None].float().expand_as(batch.obs))
    assert torch.equal(batch.next_obs, batch.obs + 1)
    assert torch.equal(batch.action.value, i % 5)
    assert torch.equal(batch.action.log_prob, -i.float())
    assert torch.equal(batch.terminated, i % 2 == 0)
    return i.tolist()


def stored_ids(buffer: ReplayBuffer[StochasticAction], seed: int = 0) -> set[int]:
    """What the buffer holds, seen through sampling (enough draws to see every item)."""
    g = torch.Generator().manual_seed(seed)
    return set(ids_of(buffer.sample(64 * buffer.capacity, generator=g)))


# ---------------------------------------------------------------------- ReplayBuffer, property-based
@SETTINGS
@given(
    capacity=st.integers(1, 8),
    adds=st.lists(st.integers(0, 12), min_size=1, max_size=8),
)
# (always tried: single-transition adds, which take their own path, wrapping around)
@example(capacity=3, adds=[2, 1, 1])
@example(capacity=2, adds=[1, 1, 1, 1, 1])
@example(capacity=3, adds=[1, 3, 1, 1, 2, 1])
def test_replay_buffer_matches_a_list_model_of_a_ring(capacity, adds):
    buffer: ReplayBuffer[StochasticAction] = ReplayBuffer(capacity)
    model: list[int] = []  # oldest first
    next_id = 0
    for n in adds:
        ids = list(range(next_id, next_id + n))
        next_id += n
        buffer.add(transitions(ids))
        model = (model + ids)[-capacity:]  # overwrite the oldest, keep the newest
        assert len(buffer) == len(model)
        if model:
            assert stored_ids(buffer, seed=next_id) == set(model)
        else:
            with pytest.raises(ValueError, match="empty"):
                buffer.sample(1)


@SETTINGS
@given(capacity=st.integers(1, 6), n=st.integers(1, 20), start=st.integers(0, 10))
def test_an_add_larger_than_capacity_keeps_its_newest_items(capacity, n, start):
    buffer: ReplayBuffer[StochasticAction] = ReplayBuffer(capacity)
    buffer.add(transitions(list(range(1000, 1000 + start))))  # move the ring position
    ids = list(range(n))
    buffer.add(transitions(ids))
    expected = (list(range(1000, 1000 + start)) + ids)[-capacity:]
    assert len(buffer) == len(expected)
    assert stored_ids(buffer) == set(expected)


def test_sample_is_uniform_with_replacement_and_reproducible_with_a_generator():
    buffer: ReplayBuffer[StochasticAction] = ReplayBuffer(4)
    buffer.add(transitions([10, 11, 12, 13, 14, 15]))  # wraps: holds 12..15
    g = torch.Generator().manual_seed(0)
    batch = buffer.sample(8000, generator=g)
    counts = torch.bincount(batch.reward.long() - 12, minlength=4)
    assert counts.sum() == 8000 and counts.shape == (4,)
    assert ((counts - 2000).abs() < 200).all(), counts  # 4.5 standard deviations
    a = buffer.sample(16, generator=torch.Generator().manual_seed(3))
    b = buffer.sample(16, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a.reward, b.reward)
    assert type(a.action) is StochasticAction and a.reward.dtype == torch.float32
    assert a.obs.device == buffer.device == torch.device("cpu")


def test_replay_buffer_stores_dict_observations_and_a_device():
    buffer: ReplayBuffer[Action] = ReplayBuffer(5, device="cpu")
    n = 7
    obs = DictObs(torch.arange(2 * n).float().view(n, 2), torch.arange(n))
    data = Transitions(
        obs, Action(torch.arange(n)), torch.arange(n).float(), obs, torch.zeros(n, dtype=torch.bool)
    )
    buffer.add(data)
    batch = buffer.sample(50, generator=torch.Generator().manual_seed(0))
    assert isinstance(batch.obs, DictObs) and isinstance(batch.next_obs, DictObs)
    assert torch.equal(batch.obs.cell, batch.reward.long())
    assert torch.equal(batch.obs.position[:, 0], 2 * batch.reward)
    assert set(batch.obs.cell.tolist()) <= {2, 3, 4, 5, 6}


@dataclasses.dataclass(frozen=True)
class ScaledAction(StochasticAction):
    scale: Tensor = unbatched()  # one value for the whole batch


def scaled(ids: list[int], scale: list[float]) -> Transitions[ScaledAction]:
    data = transitions(ids)
    action = ScaledAction(data.action.value, data.action.log_prob, torch.tensor(scale))
    return dataclasses.replace(data, action=action)


def test_replay_buffer_stores_an_unbatched_field_once():
    buffer: ReplayBuffer[ScaledAction] = ReplayBuffer(4)
    buffer.add(scaled([0, 1, 2], [2.0, 3.0]))
    buffer.add(scaled([3, 4], [2.0, 3.0]))  # wraps around
    batch = buffer.sample(64, generator=torch.Generator().manual_seed(0))
    assert isinstance(batch.action, ScaledAction)
    assert torch.equal(batch.action.scale, torch.tensor([2.0, 3.0]))
    assert set(ids_of(batch)) == {1, 2, 3, 4}
    with pytest.raises(ValueError, match=r"unbatched field 'action.scale'.*same value"):
        buffer.add(scaled([5], [2.0, 4.0]))
    assert len(buffer) == 4 and set(ids_of(buffer.sample(64))) == {1, 2, 3, 4}
    # on a buffer's device, the unbatched field is there too (the "meta" device stands in
    # for a GPU: every tensor of a sample must be on it)
    elsewhere: ReplayBuffer[ScaledAction] = ReplayBuffer(4, device="meta")
    elsewhere.add(scaled([0, 1], [2.0, 3.0]))
    batch = elsewhere.sample(3)
    assert {t.device.type for t in (batch.action.scale, batch.action.value, batch.reward)} == {
        "meta"
    }


# ---------------------------------------------------------------------- ReplayBuffer, bad input
@pytest.mark.parametrize("device", ["cuda:99", "gpu"])
def test_replay_buffer_refuses_a_device_this_machine_lacks_at_construction(device):
    # (not at the first add, where torch would allocate the storage there)
    with pytest.raises(ValueError, match=f"ReplayBuffer: device '{device}' is not"):
        ReplayBuffer(10, device=device)


@pytest.mark.parametrize("capacity", [0, -3, 2.5, True, "10"])
def test_replay_buffer_capacity_must_be_a_positive_int(capacity):
    with pytest.raises(ValueError, match="capacity must be a positive int"):
        ReplayBuffer(capacity)


def test_sample_on_an_empty_buffer_or_with_a_bad_batch_size_is_an_error():
    buffer: ReplayBuffer[StochasticAction] = ReplayBuffer(4)
    with pytest.raises(ValueError, match="empty; add transitions first"):
        buffer.sample(2)
    buffer.add(transitions([1]))
    for bad in (0, -1):
        with pytest.raises(ValueError, match="batch_size must be a positive int"):
            buffer.sample(bad)


def test_a_rejected_add_leaves_the_buffer_unchanged():
    buffer: ReplayBuffer[StochasticAction] = ReplayBuffer(4)
    buffer.add(transitions([0, 1, 2]))
    with pytest.raises(ValueError, match=r"'obs' has per-item shape \[4\].*stores \[3\]"):
        buffer.add(transitions([7, 8], obs_dim=4))
    wrong_dtype = dataclasses.replace(
        transitions([7, 8]), reward=torch.tensor([7.0, 8.0], dtype=torch.float64)
    )
    with pytest.raises(ValueError, match=r"'reward'.*torch.float64.*torch.float32"):
        buffer.add(wrong_dtype)
    nested = dataclasses.replace(
        transitions([7, 8]), action=StochasticAction(torch.tensor([2, 3]).int(), torch.zeros(2))
    )
    with pytest.raises(ValueError, match=r"'action.value'.*torch.int32"):
        buffer.add(nested)
    plain_action = dataclasses.replace(transitions([7, 8]), action=Action(torch.tensor([2, 3])))
    with pytest.raises(
        TypeError, match="Transitions with StochasticAction, got Transitions with Action"
    ):
        buffer.add(plain_action)
    with pytest.raises(TypeError, match="expects Transitions"):
        buffer.add(torch.zeros(3))  # type: ignore[arg-type]
    assert len(buffer) == 3 and stored_ids(buffer) == {0, 1, 2}
    # the ring position did not move either: the next add overwrites the oldest item only
    buffer.add(transitions([3, 4]))
    assert len(buffer) == 4 and stored_ids(buffer) == {1, 2, 3, 4}


def test_a_first_add_of_non_tensor_fields_is_refused_and_leaves_the_buffer_usable():
    buffer: ReplayBuffer[StochasticAction] = ReplayBuffer(4)
    good = transitions([0, 1])
    numpy_obs = dataclasses.replace(good, obs=good.obs.numpy())
    with pytest.raises(TypeError, match="field 'obs' is a ndarray, expected a tensor"):
        buffer.add(numpy_obs)
    numpy_log_prob = dataclasses.replace(
        good, action=StochasticAction(good.action.value, good.action.log_prob.numpy())
    )
    with pytest.raises(TypeError, match="field 'action.log_prob' is a ndarray"):
        buffer.add(numpy_log_prob)
    assert len(buffer) == 0
    buffer.add(good)
    assert len(buffer) == 2 and stored_ids(buffer) == {0, 1}


def test_a_first_add_on_the_meta_device_is_refused_and_fixes_no_storage_layout():
    buffer: ReplayBuffer[StochasticAction] = ReplayBuffer(4)
    meta = transitions([0, 1], obs_dim=4)
    meta = dataclasses.replace(meta, next_obs=meta.next_obs.to("meta"))
    with pytest.raises(
        ValueError, match="ReplayBuffer.add: field 'next_obs' is on the meta device, which holds"
    ):
        buffer.add(meta)
    assert len(buffer) == 0
    buffer.add(transitions([0, 1], obs_dim=3))  # another per-item shape: the first layout
    assert len(buffer) == 2 and stored_ids(buffer) == {0, 1}
    with pytest.raises(ValueError, match="on the meta device"):  # and on a later add
        buffer.add(dataclasses.replace(transitions([2]), reward=torch.zeros(1, device="meta")))
    assert len(buffer) == 2 and stored_ids(buffer) == {0, 1}


def test_an_unbatched_field_on_the_meta_device_is_refused():
    buffer: ReplayBuffer[ScaledAction] = ReplayBuffer(4)
    good = scaled([0, 1], [2.0, 3.0])
    meta = dataclasses.replace(
        good, action=dataclasses.replace(good.action, scale=good.action.scale.to("meta"))
    )
    with pytest.raises(ValueError, match="field 'action.scale' is on the meta device"):
        buffer.add(meta)  # at the first add
    buffer.add(good)
    with pytest.raises(ValueError, match="field 'action.scale' is on the meta device"):
        buffer.add(meta)  # at a later one
    assert len(buffer) == 2 and set(ids_of(buffer.sample(64))) == {0, 1}


def test_sample_names_a_generator_that_is_not_one():
    buffer: ReplayBuffer[StochasticAction] = ReplayBuffer(4)
    buffer.add(transitions([1, 2]))
    for generator in (0, 1.5, "g"):
        with pytest.raises(
            TypeError, match=r"sample: generator must be a torch.Generator or None, got"
        ):
            buffer.sample(4, generator)  # type: ignore[arg-type]


BAD_ADD_KINDS = ["shape", "dtype", "meta device", "action type", "not a tensor"]


def bad_add(kind: str, field: str, ids: list[int]) -> tuple[Transitions[StochasticAction], type]:
    """A batch of transitions wrong in ``field`` (one of its tensors), with the error it must
    raise; "meta device" and "not a tensor" are wrong in an empty buffer too."""
    good = transitions(ids, obs_dim=4 if kind == "meta device" else 3)  # (another layout)
    path = field.split(".")
    value = operator.attrgetter(field)(good)

    def replaced(bad: object) -> Transitions[StochasticAction]:
        if len(path) == 1:
            return dataclasses.replace(good, **{field: bad})
        action = dataclasses.replace(good.action, **{path[1]: bad})
        return dataclasses.replace(good, action=action)

    if kind == "shape":
        return replaced(value[..., None].expand(*value.shape, 2)), ValueError
    if kind == "dtype":
        return replaced(value.double() if value.is_floating_point() else value.int()), ValueError
    if kind == "meta device":
        return replaced(value.to("meta")), ValueError
    if kind == "action type":
        return dataclasses.replace(good, action=Action(good.action.value)), TypeError
    return replaced(value.numpy()), TypeError


@SETTINGS
@given(
    capacity=st.integers(1, 6),
    adds=st.lists(st.integers(0, 7), min_size=0, max_size=4),
    kind=st.sampled_from(BAD_ADD_KINDS),
    field=st.sampled_from(["obs", "action.value", "action.log_prob", "reward", "terminated"]),
    bad_size=st.integers(1, 8),
    later=st.lists(st.integers(1, 4), min_size=1, max_size=3),
)
@example(capacity=3, adds=[], kind="meta device", field="obs", bad_size=2, later=[1])
@example(capacity=3, adds=[2], kind="shape", field="obs", bad_size=1, later=[1, 1])
def test_a_rejected_add_leaves_the_buffer_as_one_that_never_saw_it(
    capacity, adds, kind, field, bad_size, later
):
    """A rejected add (into an empty buffer too), then the same valid adds: the buffer
    holds bit for bit what a twin buffer holds that never saw the rejected one."""
    if not any(adds) and kind not in ("meta device", "not a tensor"):
        kind = "meta device"  # (in an empty buffer, any layout is a valid first one)
    tried: ReplayBuffer[StochasticAction] = ReplayBuffer(capacity)
    twin: ReplayBuffer[StochasticAction] = ReplayBuffer(capacity)
    next_id = 0
    for n in adds:
        batch = transitions(list(range(next_id, next_id + n)))
        next_id += n
        tried.add(batch)
        twin.add(batch)
    size = len(tried)
    bad, error = bad_add(kind, field, list(range(100, 100 + bad_size)))
    with pytest.raises(error):
        tried.add(bad)
    assert len(tried) == size
    for n in later:  # the ring position did not move: the next adds land where the twin's do
        batch = transitions(list(range(next_id, next_id + n)))
        next_id += n
        tried.add(batch)
        twin.add(batch)
        got = tried.sample(32, generator=torch.Generator().manual_seed(n))
        want = twin.sample(32, generator=torch.Generator().manual_seed(n))
        assert len(tried) == len(twin)
        for u, v in zip(got.tensors(), want.tensors()):
            assert torch.equal(
                u.view(torch.uint8) if u.dtype != torch.bool else u,
                v.view(torch.uint8) if v.dtype != torch.bool else v,
            )


@pytest.mark.parametrize("obs_dim", [3, 40])  # small items go through Python scalars
def test_a_single_transition_is_stored_exactly_and_checked_like_any_add(obs_dim):
    buffer: ReplayBuffer[StochasticAction] = ReplayBuffer(2)
    values = [0.1, -0.0, 1e-40, 3.4e38, float("inf"), float("-inf"), float("nan"), 2.5e-7]
    obs = torch.tensor(values * (obs_dim // 8 + 1))[:obs_dim].view(1, obs_dim)
    exact = Transitions(
        obs=obs,
        action=StochasticAction(torch.tensor([2**62 + 1]), torch.tensor([-1e-30])),
        reward=torch.tensor([0.1]).requires_grad_(),  # stored detached
        next_obs=-obs,
        terminated=torch.tensor([True]),
    )
    buffer.add(transitions([7], obs_dim=obs_dim))
    buffer.add(exact)  # the ring is full now

    def bits(t: Tensor) -> Tensor:  # compared bit for bit (NaN and -0.0 included)
        return t.view(torch.int32) if t.dtype == torch.float32 else t

    stored = buffer.sample(64, generator=torch.Generator().manual_seed(0))
    rows = stored.action.value == 2**62 + 1
    assert 0 < int(rows.sum()) < 64
    for got, want in [
        (stored.obs[rows], obs),
        (stored.next_obs[rows], -obs),
        (stored.action.log_prob[rows], exact.action.log_prob),
        (stored.reward[rows], exact.reward.detach()),
        (stored.terminated[rows], exact.terminated),
    ]:
        assert got.dtype == want.dtype and torch.equal(bits(got), bits(want).expand_as(got))
    # a single transition that does not fit is rejected whole, like any other add
    one = transitions([5], obs_dim=obs_dim)
    bad = [
        (dataclasses.replace(one, obs=one.obs[:, :-1]), ValueError, "'obs' has per-item shape"),
        (dataclasses.replace(one, obs=one.obs[:, :, None]), ValueError, "'obs' has per-item"),
        (dataclasses.replace(one, reward=one.reward.double()), ValueError, "'reward'.*float64"),
        (
            dataclasses.replace(
                one, action=StochasticAction(one.action.value.int(), torch.zeros(1))
            ),
            ValueError,
            "'action.value'.*torch.int32",
        ),
        (dataclasses.replace(one, action=Action(one.action.value)), TypeError, "with Action"),
        # (a field that cannot be read, after fields that can: nothing is written either)
        (
            dataclasses.replace(one, terminated=one.terminated.to("meta")),
            ValueError,
            "field 'terminated' is on the meta device, which holds no values to store",
        ),
    ]
    before = buffer.sample(256, generator=torch.Generator().manual_seed(1))
    for data, error, message in bad:
        with pytest.raises(error, match=message):
            buffer.add(data)
    after = buffer.sample(256, generator=torch.Generator().manual_seed(1))
    assert len(buffer) == 2
    for field in ("obs", "next_obs", "action.value", "action.log_prob", "reward", "terminated"):
        get = operator.attrgetter(field)
        assert torch.equal(bits(get(before)), bits(get(after))), field


# ---------------------------------------------------------------------- Episode, Rollout
def test_episode_len_cumulated_reward_and_all_obs():
    obs = torch.arange(12.0).view(4, 3)
    final = torch.tensor([100.0, 101.0, 102.0])
    ep = Episode(
        obs, Action(torch.tensor([0, 1, 1, 0])), torch.tensor([1.0, 0.5, -2.0, 4.0]), final, True
    )
    assert len(ep) == 4
    assert ep.cumulated_reward == pytest.approx(3.5) and isinstance(ep.cumulated_reward, float)
    assert ep.all_obs.shape == (5, 3)
    assert torch.equal(ep.all_obs[:4], obs) and torch.equal(ep.all_obs[4], final)
    assert ep.terminated is True
    part = ep[1:3]  # final_obs is not a time step: it is not sliced
    assert len(part) == 2 and torch.equal(part.final_obs, final) and part.terminated is True


def test_episode_all_obs_with_dict_observations():
    obs = DictObs(torch.zeros(3, 2), torch.tensor([0, 1, 2]))
    final = DictObs(torch.ones(1, 2), torch.tensor([3]))[0]  # one observation, no time dim
    ep = Episode(obs, Action(torch.zeros(3, dtype=torch.long)), torch.ones(3), final, False)
    all_obs = ep.all_obs
    assert isinstance(all_obs, DictObs) and len(all_obs) == 4
    assert torch.equal(all_obs.cell, torch.tensor([0, 1, 2, 3]))
    assert torch.equal(all_obs.position[3], torch.ones(2))


def test_rollout_done_and_flatten_row_order():
    T, B = 3, 2
    k = torch.arange(T * B).view(T, B)
    rollout = Rollout(
        obs=k.float()[..., None],
        action=StochasticAction(k, -k.float()),
        reward=k.float(),
        next_obs=k.float()[..., None] + 1,
        terminated=k == 1,
        truncated=k == 4,
    )
    assert torch.equal(rollout.done, (k == 1) | (k == 4))
    flat = rollout.flatten()
    assert len(flat) == T * B and flat.obs.shape == (T * B, 1)
    assert torch.equal(flat.reward, torch.arange(T * B).float())  # row t * B + b
    assert torch.equal(flat.action.log_prob, -torch.arange(T * B).float())
    assert torch.equal(flat.done, (torch.arange(6) == 1) | (torch.arange(6) == 4))
    with pytest.raises(ValueError, match=r"expects \[T, B\] fields, reward has shape \[6\]"):
        flat.flatten()


# ---------------------------------------------------------------------- minibatches
@SETTINGS
@given(
    n=st.integers(1, 40),
    batch_size=st.integers(1, 16),
    shuffle=st.booleans(),
    seed=st.integers(0, 99),
)
def test_minibatches_yield_every_sample_exactly_once_per_pass(n, batch_size, shuffle, seed):
    data = transitions(list(range(n)))
    extra = torch.arange(n) * 10
    g = torch.Generator().manual_seed(seed)
    seen: list[int] = []
    sizes = []
    for batch, extra_batch in minibatches((data, extra), batch_size, shuffle=shuffle, generator=g):
        ids = ids_of(batch)
        assert extra_batch.tolist() == [10 * i for i in ids]  # the tuple stays aligned
        seen += ids
        sizes.append(len(ids))
    assert sorted(seen) == list(range(n))
    assert sizes == [batch_size] * (n // batch_size) + ([n % batch_size] if n % batch_size else [])
    if not shuffle:
        assert seen == list(range(n))


def test_minibatches_of_a_tensor_or_a_struct_and_shuffling():
    x = torch.arange(100)
    passes = [torch.cat(list(minibatches(x, 30))) for _ in range(2)]
    assert all(sorted(p.tolist()) == list(range(100)) for p in passes)
    assert not torch.equal(passes[0], x) or not torch.equal(passes[1], x)  # shuffled
    a = torch.cat(list(minibatches(x, 7, generator=torch.Generator().manual_seed(5))))
    b = torch.cat(list(minibatches(x, 7, generator=torch.Generator().manual_seed(5))))
    assert torch.equal(a, b)
    batches = list(minibatches(transitions([0, 1, 2]), 2, shuffle=False))
    assert all(isinstance(mb, Transitions) for mb in batches) and [len(mb) for mb in batches] == [
        2,
        1,
    ]


def test_minibatches_bad_input():
    # (raised at the call, not at the first iteration)
    for bad in (0, -2, 1.5):
        with pytest.raises(ValueError, match="batch_size must be a positive int"):
            minibatches(torch.zeros(4), bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"share their leading size, got \[4, 3\]"):
        minibatches((torch.zeros(4), torch.zeros(3)), 2)
    with pytest.raises(ValueError, match="empty tuple"):
        minibatches((), 2)
    with pytest.raises(TypeError, match="expects a tensor, a TensorStruct or a tuple"):
        minibatches([1, 2, 3], 2)  # type: ignore[call-overload]
