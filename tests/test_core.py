"""rl_mind.core: TensorStruct operations (property-based), Action types, Actor defaults."""

from __future__ import annotations

import dataclasses
import operator
from math import inf

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor, nn

from rl_mind.core import Action, Actor, StochasticAction, TensorStruct, unbatched

SETTINGS = settings(max_examples=50, deadline=None)


@dataclasses.dataclass(frozen=True)
class Inner(TensorStruct):
    a: Tensor  # [N, 2] long
    b: Tensor  # [N] float


@dataclasses.dataclass(frozen=True)
class Outer(TensorStruct):
    x: Tensor  # [N, 3] float
    flag: Tensor  # [N] bool
    inner: Inner
    name: str = "meta"  # metadata, passed through
    scale: Tensor = unbatched(default=None)  # [2], not indexed


@dataclasses.dataclass(frozen=True)
class Other(TensorStruct):
    x: Tensor


def make(n: int, seed: int = 0, name: str = "meta") -> Outer:
    g = torch.Generator().manual_seed(seed)
    return Outer(
        x=torch.randn(n, 3, generator=g),
        flag=torch.rand(n, generator=g) < 0.5,
        inner=Inner(torch.randint(0, 100, (n, 2), generator=g), torch.randn(n, generator=g)),
        name=name,
        scale=torch.tensor([1.0, 2.0]),
    )


def leaves(s: Outer) -> list[Tensor]:
    """The batched tensors of an Outer, in a fixed order."""
    return [s.x, s.flag, s.inner.a, s.inner.b]


def assert_indexed_like(result: Outer, source: Outer, index: object) -> None:
    for got, full in zip(leaves(result), leaves(source)):
        assert torch.equal(got, full[index])  # type: ignore[index]
    assert result.name == source.name
    assert result.scale is source.scale  # unbatched: not indexed


sizes = st.integers(min_value=0, max_value=8)
seeds = st.integers(min_value=0, max_value=10_000)


# ---------------------------------------------------------------------- indexing
@SETTINGS
@given(n=st.integers(1, 8), seed=seeds, data=st.data())
def test_int_index_removes_the_leading_dim_of_every_batched_field(n, seed, data):
    s = make(n, seed)
    i = data.draw(st.integers(-n, n - 1))
    item = s[i]
    assert_indexed_like(item, s, i)
    assert item.flag.dim() == 0 and item.inner.b.dim() == 0
    # an item has no length, but can still be cloned/moved and stacked back into a batch
    with pytest.raises(TypeError, match="single item"):
        len(item)
    assert torch.equal(item.clone().x, s.x[i])
    restacked = Outer.stack([s[j] for j in range(n)])
    for got, full in zip(leaves(restacked), leaves(s)):
        assert torch.equal(got, full)


@SETTINGS
@given(
    n=sizes,
    seed=seeds,
    start=st.integers(-10, 10) | st.none(),
    stop=st.integers(-10, 10) | st.none(),
    step=st.integers(1, 3) | st.none(),
)
def test_slice_index_matches_tensor_slicing(n, seed, start, stop, step):
    s = make(n, seed)
    index = slice(start, stop, step)
    result = s[index]
    assert_indexed_like(result, s, index)
    assert len(result) == len(range(n)[index])


@SETTINGS
@given(n=sizes, seed=seeds, data=st.data())
def test_bool_mask_and_index_tensor_and_list_match_tensor_indexing(n, seed, data):
    s = make(n, seed)
    mask = torch.tensor(
        data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=torch.bool
    )
    assert_indexed_like(s[mask], s, mask)
    assert len(s[mask]) == int(mask.sum())
    if n > 0:
        picks = data.draw(st.lists(st.integers(0, n - 1), max_size=10))
        index = torch.tensor(picks, dtype=torch.long)
        assert_indexed_like(s[index], s, index)  # repeats allowed
        assert_indexed_like(s[picks], s, picks)


def test_numpy_ints_and_0d_index_tensors_index_like_an_int():
    import numpy as np

    s = make(4, 1)
    for index in (np.int64(2), torch.tensor(2), torch.tensor(-2)):
        assert_indexed_like(s[index], s, int(index))
    assert torch.equal(s[torch.tensor([2])].x, s.x[[2]])  # a 1-d index keeps the dim


def test_index_errors_say_what_was_expected():
    s = make(4)
    with pytest.raises(IndexError, match=r"mask must have shape \[4\], got \[3\]"):
        s[torch.tensor([True, False, True])]
    with pytest.raises(IndexError, match="index 4 out of range for length 4"):
        s[4]
    with pytest.raises(IndexError, match="out of range"):
        s[-5]


# ---------------------------------------------------------------------- len, construction errors
@SETTINGS
@given(n=sizes, seed=seeds)
def test_len_is_the_leading_dim(n, seed):
    assert len(make(n, seed)) == n


def test_fields_with_different_leading_sizes_name_the_fields_and_sizes():
    with pytest.raises(ValueError, match=r"'x' has 3 and 'flag' has 2"):
        Outer(
            torch.zeros(3, 3),
            torch.zeros(2, dtype=torch.bool),
            Inner(torch.zeros(3, 2), torch.zeros(3)),
        )
    # a nested struct counts with its own leading size
    with pytest.raises(ValueError, match=r"'x' has 3 and 'inner' has 5"):
        Outer(
            torch.zeros(3, 3),
            torch.zeros(3, dtype=torch.bool),
            Inner(torch.zeros(5, 2), torch.zeros(5)),
        )
    # and is itself checked
    with pytest.raises(ValueError, match=r"Inner.*'a' has 5 and 'b' has 4"):
        Inner(torch.zeros(5, 2), torch.zeros(4))


def test_a_scalar_in_a_batched_field_is_refused_with_a_hint():
    with pytest.raises(ValueError, match=r"Other.x.*0-d tensor.*unsqueeze\(0\).*unbatched\(\)"):
        Other(torch.tensor(1.0))


def test_structs_are_frozen_and_a_struct_without_tensors_has_no_length():
    s = make(2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.x = torch.zeros(2, 3)  # type: ignore[misc]

    @dataclasses.dataclass(frozen=True)
    class Meta(TensorStruct):
        label: str

    with pytest.raises(TypeError, match="no batched tensor field"):
        len(Meta("a"))
    with pytest.raises(TypeError, match="no tensor field, so no device"):
        _ = Meta("a").device


# ---------------------------------------------------------------------- set_
@SETTINGS
@given(n=st.integers(1, 8), seed=seeds, data=st.data())
def test_set_writes_rows_in_place_like_tensor_assignment(n, seed, data):
    s = make(n, seed)
    before = [t.clone() for t in leaves(s)]
    picks = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    index = torch.tensor(picks)
    value = make(len(picks), seed + 1)
    storage = [t.data_ptr() for t in leaves(s)]
    s.set_(index, value)
    for got, old, new in zip(leaves(s), before, leaves(value)):
        expected = old.clone()
        expected[index] = new
        assert torch.equal(got, expected)
    assert [t.data_ptr() for t in leaves(s)] == storage  # in place, same tensors
    # an int row takes an item
    s.set_(0, value[0])
    assert torch.equal(s.x[0], value.x[0]) and torch.equal(s.inner.a[0], value.inner.a[0])


def test_set_refuses_another_struct_type():
    with pytest.raises(TypeError, match="expected a Outer, got Other"):
        make(2).set_(0, Other(torch.zeros(1)))  # type: ignore[arg-type]


def test_set_checks_every_field_before_writing_any():
    s = make(3)
    before = [t.clone() for t in leaves(s)]
    bad_last = dataclasses.replace(make(2, 1), inner=Inner(torch.zeros(2, 5).long(), torch.ones(2)))
    with pytest.raises(
        ValueError, match=r"field 'inner.a' of shape \[2, 5\] does not fit .*\[2, 2\]"
    ):
        s.set_(slice(0, 2), bad_last)
    wrong_type = dataclasses.replace(make(2, 1), inner=Other(torch.zeros(2)))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="field 'inner': expected a Inner, got Other"):
        s.set_(slice(0, 2), wrong_type)
    for got, old in zip(leaves(s), before):  # the fields before the bad one were not written
        assert torch.equal(got, old)


def test_set_refuses_values_the_struct_would_truncate_and_takes_integers_into_floats():
    s = make(2)
    before = [t.clone() for t in leaves(s)]
    half = Inner(torch.full((2, 2), 0.5), torch.zeros(2))  # float into the long field 'a'
    with pytest.raises(
        ValueError,
        match=r"field 'inner.a' is torch.float32, which the struct's torch.int64 tensor would "
        r"truncate; convert it first, e.g. value.round\(\).to\(torch.int64\)",
    ):
        s.set_(slice(None), dataclasses.replace(make(2, 1), inner=half))
    with pytest.raises(ValueError, match=r"'x' is torch.complex64.*float32.*value.real"):
        s.set_(slice(None), dataclasses.replace(make(2, 1), x=torch.ones(2, 3, dtype=torch.cfloat)))
    with pytest.raises(ValueError, match=r"'flag' is torch.int64.*torch.bool.*value != 0"):
        s.set_(slice(None), dataclasses.replace(make(2, 1), flag=torch.ones(2, dtype=torch.long)))
    for got, old in zip(leaves(s), before):
        assert torch.equal(got, old)
    # an integer value goes into a float field (nothing is lost), a float64 into float32
    whole = dataclasses.replace(make(2, 1), x=torch.arange(6).view(2, 3))
    s.set_(slice(None), whole)
    assert s.x.dtype == torch.float32 and s.x.tolist() == [[0, 1, 2], [3, 4, 5]]
    s.set_(0, dataclasses.replace(make(2, 1), x=torch.ones(2, 3, dtype=torch.float64))[0])
    assert s.x[0].tolist() == [1, 1, 1]


@dataclasses.dataclass(frozen=True)
class Narrow(TensorStruct):
    small: Tensor  # [N] uint8
    half: Tensor  # [N] float16


def test_set_refuses_values_outside_a_narrower_dtype_and_takes_those_inside():
    s = Narrow(torch.zeros(3, dtype=torch.uint8), torch.zeros(3, dtype=torch.float16))
    for small, half, message in [
        (
            [1, 300, 2],
            [0.0] * 3,
            r"'small' holds values outside \[0, 255\], the range of the "
            r"struct's torch.uint8 tensor.*value.clamp\(0, 255\)",
        ),
        ([1, -1, 2], [0.0] * 3, r"'small' holds values outside \[0, 255\]"),
        ([1, 2, 3], [1e5, 0.0, 0.0], r"'half' holds values outside \[-65504, 65504\]"),
    ]:
        with pytest.raises(ValueError, match=message):
            s.set_(slice(None), Narrow(torch.tensor(small), torch.tensor(half)))
        assert s.small.tolist() == [0, 0, 0] and s.half.tolist() == [0, 0, 0]
    # inside the range (inf and NaN stay what they are), from wider dtypes: written
    s.set_(slice(None), Narrow(torch.tensor([1, 255, 0]), torch.tensor([1.5, inf, 0.0]).double()))
    assert s.small.tolist() == [1, 255, 0] and s.half.tolist() == [1.5, inf, 0.0]


def test_set_refuses_a_value_on_another_device_and_writes_no_field():
    s = make(3)
    before = [t.clone() for t in leaves(s)]
    value = make(2, 1)
    on_meta = dataclasses.replace(value, inner=Inner(value.inner.a, value.inner.b.to("meta")))
    with pytest.raises(
        ValueError,
        match=r"field 'inner.b' is on meta, the struct's tensor on cpu; the meta device holds no "
        r"values to write",
    ):
        s.set_(slice(0, 2), on_meta)
    for got, old in zip(leaves(s), before):  # 'x', 'flag' and 'inner.a' were not written
        assert torch.equal(got, old)
    # (a struct elsewhere, as on a GPU: the meta device stands in for one)
    with pytest.raises(ValueError, match=r"'x' is on cpu, the struct's tensor on meta; move it"):
        s.to("meta").set_(slice(0, 2), value)


def bits(t: Tensor) -> Tensor:
    """A tensor's bytes, to compare bit for bit (NaN and -0.0 included)."""
    return t.contiguous().view(torch.uint8) if t.dtype != torch.bool else t


BAD_SET_KINDS = [
    "shape",
    "truncating dtype",
    "out of range",
    "meta device",
    "struct type",
    "not a tensor",
]


@SETTINGS
@given(n=st.integers(1, 6), seed=seeds, data=st.data())
def test_a_rejected_set_leaves_every_tensor_bit_for_bit_as_it_was(n, seed, data):
    s = make(n, seed)
    s.x[0, 0] = float("nan")  # (the comparison is of bits)
    before = [bits(t).clone() for t in s.tensors()]
    picks = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    index = data.draw(st.sampled_from([torch.tensor(picks), slice(0, len(picks)), picks]))
    value = make(len(picks), seed + 1)
    kind = data.draw(st.sampled_from(BAD_SET_KINDS))
    field = data.draw(st.sampled_from(["x", "flag", "inner.a", "inner.b"]))
    path = field.split(".")

    def replaced(bad: object) -> Outer:
        if len(path) == 1:
            return dataclasses.replace(value, **{field: bad})
        return dataclasses.replace(value, inner=dataclasses.replace(value.inner, **{path[1]: bad}))

    good = operator.attrgetter(field)(value)
    if kind == "shape":
        bad_value, error = replaced(good[..., None].expand(*good.shape, 2)), ValueError
    elif kind == "truncating dtype":
        wider = torch.float64 if field in ("inner.a", "flag") else torch.cfloat
        bad_value, error = replaced(good.to(wider) + 0.5), ValueError
    elif kind == "out of range":  # (a float64 beyond float32: only float fields have one)
        if field not in ("x", "inner.b"):
            field, path, good = "x", ["x"], value.x
        bad_value, error = replaced(torch.full_like(good, -1e300, dtype=torch.float64)), ValueError
    elif kind == "meta device":
        bad_value, error = replaced(good.to("meta")), ValueError
    elif kind == "struct type":
        bad_value, error = dataclasses.replace(value, inner=Other(value.inner.b)), TypeError
    else:
        bad_value, error = replaced(good.tolist()), TypeError
    with pytest.raises(error):
        s.set_(index, bad_value)
    assert all(torch.equal(bits(t), old) for t, old in zip(s.tensors(), before))


# ---------------------------------------------------------------------- cat, stack
@SETTINGS
@given(seed=seeds, parts=st.lists(st.integers(0, 4), min_size=1, max_size=5))
def test_cat_of_the_pieces_of_a_struct_gives_it_back(seed, parts):
    s = make(sum(parts), seed)
    bounds = [0]
    for p in parts:
        bounds.append(bounds[-1] + p)
    pieces = [s[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    result = Outer.cat(pieces)
    for got, full in zip(leaves(result), leaves(s)):
        assert torch.equal(got, full)
    assert result.name == "meta" and torch.equal(result.scale, s.scale)
    assert type(result.inner) is Inner


@SETTINGS
@given(n=sizes, k=st.integers(1, 4), seed=seeds)
def test_stack_adds_a_leading_dim_and_item_j_is_input_j(n, k, seed):
    items = [make(n, seed + j) for j in range(k)]
    result = Outer.stack(items)
    assert len(result) == k
    assert result.x.shape == (k, n, 3) and result.inner.b.shape == (k, n)
    for j in range(k):
        for got, src in zip(leaves(result[j]), leaves(items[j])):
            assert torch.equal(got, src)
    assert result.scale.shape == (2,)  # unbatched: not stacked


def test_cat_and_stack_of_nothing_or_of_mixed_types_are_errors():
    for op in (Outer.cat, Outer.stack):
        with pytest.raises(ValueError, match="at least one item, got an empty list"):
            op([])
        with pytest.raises(TypeError, match="item 0 is a Outer and item 1 is a Other"):
            op([make(1), Other(torch.zeros(1))])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="StochasticAction.*Action"):
        Action.cat([StochasticAction(torch.zeros(1), torch.zeros(1)), Action(torch.zeros(1))])
    # not a list of structs
    with pytest.raises(TypeError, match="expected a list of Outer, got NoneType"):
        Outer.cat(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got Outer .a single Outer: wrap it in a list"):
        Outer.stack(make(2))  # type: ignore[arg-type]
    # a nested struct's error names the field
    with pytest.raises(TypeError, match="Outer.cat: field 'inner': Inner.cat: .*item 1 is a Other"):
        Outer.cat([make(1), dataclasses.replace(make(1), inner=Other(torch.zeros(1)))])  # type: ignore[arg-type]


def test_cat_and_stack_take_plain_metadata_from_the_first_item():
    items = [make(2, 0, name="first"), make(2, 1, name="second"), make(2, 2, name="third")]
    assert Outer.cat(items).name == "first"
    assert Outer.stack(items).name == "first"


def test_cat_of_a_subclass_keeps_the_subclass():
    items = [StochasticAction(torch.arange(2), torch.zeros(2)) for _ in range(2)]
    result = Action.cat(items)
    assert type(result) is StochasticAction
    assert torch.equal(result.value, torch.tensor([0, 1, 0, 1]))


def _struct_family() -> tuple[type, type, type]:
    """A struct, a subclass with one more field, and a slots=True struct (new classes)."""

    @dataclasses.dataclass(frozen=True)
    class Parent(TensorStruct):
        a: Tensor

    @dataclasses.dataclass(frozen=True)
    class Child(Parent):
        b: Tensor
        tag: str = dataclasses.field(default="x", metadata={"unbatched": True})

    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted(TensorStruct):
        a: Tensor
        b: Tensor

    return Parent, Child, Slotted


@pytest.mark.parametrize("child_first", [False, True])
def test_trusted_construction_builds_each_class_with_its_own_fields(child_first):
    # the package's hot paths build structs without the size check, through a constructor
    # written for each class on its first use: a subclass must not get its parent's (nor
    # the parent its child's), and a slots=True struct keeps its values in its slots
    parent, child, slotted = _struct_family()
    x, y = torch.zeros(2), torch.ones(2)
    values = {parent: (x,), child: (x, y, "t"), slotted: (x, y)}
    order = [child, parent, slotted] if child_first else [parent, child, slotted]
    for _ in range(2):  # the first call writes the constructor, the second uses it
        for cls in order:
            struct = cls._trusted(*values[cls])  # type: ignore[attr-defined]
            assert type(struct) is cls and len(struct) == 2
            assert struct.a is x
            if cls is not parent:
                assert struct.b is y
            with pytest.raises(dataclasses.FrozenInstanceError):
                struct.a = y
    assert child._trusted(x, y, "t").tag == "t"  # type: ignore[attr-defined]
    assert torch.equal(slotted._trusted(x, y)[1:].b, y[1:])  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        child._trusted(x, y)  # type: ignore[attr-defined]  # a field missing


def test_cat_of_incompatible_shapes_names_the_field_and_shapes():
    a, b = Other(torch.zeros(2, 3)), Other(torch.zeros(2, 4))
    with pytest.raises(
        ValueError, match=r"field 'x' has incompatible shapes \[\[2, 3\], \[2, 4\]\]"
    ):
        Other.cat([a, b])
    with pytest.raises(ValueError, match="field 'x' has incompatible shapes"):
        Other.stack([Other(torch.zeros(2)), Other(torch.zeros(3))])


def test_cat_requires_equal_unbatched_fields():
    a, b = make(2), make(2)
    b2 = dataclasses.replace(b, scale=torch.tensor([9.0, 9.0]))
    assert torch.equal(Outer.cat([a, b]).scale, a.scale)
    with pytest.raises(
        ValueError, match="unbatched field 'scale' differs between item 0 and item 1"
    ):
        Outer.cat([a, b2])


# ---------------------------------------------------------------------- to, clone, detach, apply
@SETTINGS
@given(n=sizes, seed=seeds)
def test_to_dtype_converts_floats_only_and_to_device_keeps_values(n, seed):
    s = make(n, seed)
    d = s.to(torch.float64)
    assert d.x.dtype == torch.float64 and d.inner.b.dtype == torch.float64
    assert d.scale.dtype == torch.float64  # unbatched tensors are mapped too
    assert d.flag.dtype == torch.bool and d.inner.a.dtype == torch.long
    assert torch.equal(d.inner.a, s.inner.a) and torch.allclose(d.x, s.x.double())
    assert d.name == "meta"
    c = s.to("cpu")
    assert c.device == torch.device("cpu")
    assert all(torch.equal(u, v) for u, v in zip(leaves(c), leaves(s)))
    assert s.to(dtype=torch.float16).x.dtype == torch.float16


@pytest.mark.parametrize(
    "convert",
    [
        lambda s: s.to("cpu", torch.float64),
        lambda s: s.to(device="cpu", dtype=torch.float64),
        lambda s: s.to(torch.float64, copy=True),
        lambda s: s.to(torch.device("cpu"), torch.float64, False, True),
        lambda s: s.to(torch.zeros(1, dtype=torch.float64)),  # another tensor's dtype
    ],
    ids=["device, dtype", "keywords", "dtype, copy", "positional flags", "tensor"],
)
def test_to_with_a_dtype_in_any_form_converts_floats_only(convert):
    s = make(3)
    d = convert(s)
    assert d.x.dtype == torch.float64 and d.inner.b.dtype == torch.float64
    assert d.scale.dtype == torch.float64
    assert d.inner.a.dtype == torch.long and d.flag.dtype == torch.bool  # kept as they are
    assert torch.equal(d.inner.a, s.inner.a) and torch.equal(d.flag, s.flag)
    assert torch.equal(d.x, s.x.double())


def test_to_copy_copies_and_to_keeps_the_struct_s_metadata():
    s = make(2, name="kept")
    c = s.to("cpu", copy=True)
    assert c.name == "kept" and c.x.data_ptr() != s.x.data_ptr() and torch.equal(c.x, s.x)
    assert s.to("cpu").x is s.x  # (no copy asked for, none made)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_to_a_device_this_machine_lacks_is_a_clear_error():
    with pytest.raises(ValueError, match=r"Outer.to: device 'cuda' is not available.*use 'cpu'"):
        make(2).to("cuda")
    with pytest.raises(ValueError, match=r"device 'cuda:x' is not a torch device"):
        make(2).to("cuda:x")


def test_to_from_the_meta_device_says_there_are_no_values_to_copy():
    on_meta = make(2).to("meta")  # (meta to meta is torch's own: shapes only)
    assert on_meta.x.is_meta and on_meta.inner.a.dtype == torch.long
    with pytest.raises(ValueError, match="Outer.to: a tensor is on the meta device, which holds"):
        on_meta.to("cpu")


@SETTINGS
@given(n=st.integers(1, 8), seed=seeds)
def test_clone_is_deep_and_detach_shares_storage(n, seed):
    s = make(n, seed)
    c = s.clone()
    for u, v in zip(leaves(c), leaves(s)):
        assert torch.equal(u, v) and u.data_ptr() != v.data_ptr()
    c.inner.b.add_(1.0)
    assert not torch.equal(c.inner.b, s.inner.b)
    grad = Outer(
        s.x.clone().requires_grad_(), s.flag, Inner(s.inner.a, s.inner.b.clone().requires_grad_())
    )
    d = grad.detach()
    assert not d.x.requires_grad and not d.inner.b.requires_grad
    assert d.x.data_ptr() == grad.x.data_ptr()


@SETTINGS
@given(n=sizes, seed=seeds)
def test_apply_maps_every_tensor_nested_and_unbatched_and_keeps_metadata(n, seed):
    s = make(n, seed, name="kept")
    seen: list[tuple[int, ...]] = []

    def fn(t: Tensor) -> Tensor:
        seen.append(tuple(t.shape))
        return t * 2 if t.dtype != torch.bool else ~t

    result = s.apply(fn)
    assert len(seen) == 5  # x, flag, inner.a, inner.b, scale
    assert torch.equal(result.x, s.x * 2) and torch.equal(result.inner.a, s.inner.a * 2)
    assert torch.equal(result.flag, ~s.flag) and torch.equal(result.scale, s.scale * 2)
    assert result.name == "kept" and type(result.inner) is Inner
    assert [tuple(t.shape) for t in result.tensors()] == seen


def test_unsqueeze_flatten_leading_and_device():
    s = make(3)
    u = s.unsqueeze(0)
    assert u.x.shape == (1, 3, 3) and u.inner.b.shape == (1, 3) and u.scale.shape == (2,)
    stacked = Outer.stack([make(3, 1), make(3, 2)])  # [2, 3]
    flat = stacked.flatten_leading(2)
    assert flat.x.shape == (6, 3) and len(flat) == 6
    assert torch.equal(flat.inner.a[3:], make(3, 2).inner.a)  # row t * B + b
    assert s.device == torch.device("cpu")


def test_flatten_leading_checks_n_dims_against_every_batched_field():
    stacked = Outer.stack([make(3, 1), make(3, 2)])  # x [2, 3, 3], flag [2, 3]: at most 2
    assert stacked.flatten_leading(1).x.shape == (2, 3, 3)  # nothing merged
    for n_dims in (0, -1, 3):
        with pytest.raises(
            ValueError,
            match=rf"Outer.flatten_leading: n_dims must be an int from 1 to 2 .*got {n_dims}$",
        ):
            stacked.flatten_leading(n_dims)
    for n_dims in ("2", 2.0, True):
        with pytest.raises(TypeError, match="n_dims must be an int from 1 to 2"):
            stacked.flatten_leading(n_dims)  # type: ignore[arg-type]
    assert stacked.flatten_leading(np.int64(2)).x.shape == (6, 3)


# ---------------------------------------------------------------------- actions, actors
def test_stochastic_action_is_an_action_with_a_log_prob():
    a = StochasticAction(torch.tensor([1, 0]), torch.tensor([-0.1, -0.2]))
    assert isinstance(a, Action) and len(a) == 2
    with pytest.raises(ValueError, match=r"'value' has 2 and 'log_prob' has 3"):
        StochasticAction(torch.tensor([1, 0]), torch.zeros(3))


class LinearActor(Actor[StochasticAction]):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 2)

    def forward(self, obs: Tensor | TensorStruct) -> StochasticAction:
        assert isinstance(obs, Tensor)
        logits = self.linear(obs)
        dist = torch.distributions.Categorical(logits=logits)
        value = dist.sample()
        return StochasticAction(value, dist.log_prob(value))


def test_actor_call_returns_its_action_type_and_act_defaults_to_its_value():
    torch.manual_seed(0)
    actor = LinearActor()
    obs = torch.randn(5, 4)
    action = actor(obs)
    assert isinstance(action, StochasticAction) and action.log_prob.shape == (5,)
    torch.manual_seed(1)
    acted = actor.act(obs)
    torch.manual_seed(1)
    assert torch.equal(acted, actor(obs).value)
    assert actor.device == torch.device("cpu")


def test_actor_device_without_parameters_and_forward_not_implemented():
    class Bare(Actor[Action]):
        pass

    bare = Bare()
    assert bare.device == torch.device("cpu")
    with pytest.raises(NotImplementedError, match="Bare.forward"):
        bare(torch.zeros(1, 2))

    class WithBuffer(Actor[Action]):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("scale", torch.ones(1, dtype=torch.float64))

    assert WithBuffer().device == torch.device("cpu")


def test_cat_compares_unbatched_struct_fields_by_content():
    @dataclasses.dataclass(frozen=True)
    class Inner(TensorStruct):
        a: Tensor

    @dataclasses.dataclass(frozen=True)
    class Outer(TensorStruct):
        x: Tensor
        final: Inner = unbatched()

    same = Outer.cat(
        [Outer(torch.zeros(2), Inner(torch.zeros(3))), Outer(torch.ones(2), Inner(torch.zeros(3)))]
    )
    assert same.x.tolist() == [0, 0, 1, 1]
    with pytest.raises(
        ValueError, match="unbatched field 'final' differs between item 0 and item 1"
    ):
        Outer.cat(
            [
                Outer(torch.zeros(2), Inner(torch.zeros(3))),
                Outer(torch.ones(2), Inner(torch.ones(3))),
            ]
        )


class Left(Actor[Action]):
    def forward(self, obs: Tensor) -> Action:  # type: ignore[override]
        return Action(torch.zeros(len(obs), dtype=torch.long))


def test_counts_computed_with_numpy_are_taken_as_ints(tmp_path) -> None:
    # (a numpy integer such as np.int64(8) was refused as "not a positive int"; it is stored
    # as a plain int, so that nothing downstream, .steps included, turns into numpy)
    import numpy as np

    from rl_mind import (
        EpisodeCollector,
        Evaluator,
        FrameViewer,
        OpponentPool,
        ReplayBuffer,
        TransitionCollector,
        Transitions,
        VecEnv,
        build_mlp,
        minibatches,
        record_video,
    )

    n = np.int64
    buffer = ReplayBuffer[Action](n(8))
    assert type(buffer.capacity) is int
    data = Transitions(
        torch.zeros(4, 2), Action(torch.zeros(4, dtype=torch.long)), torch.zeros(4),
        torch.zeros(4, 2), torch.zeros(4, dtype=torch.bool),
    )  # fmt: skip
    buffer.add(data)
    assert len(buffer.sample(n(3))) == 3
    assert [len(batch) for batch in minibatches(data, n(2))] == [2, 2]
    with VecEnv("CartPole-v1", n(2), seed=0) as env:
        assert type(env.num_envs) is int and env.num_envs == 2
        collector = TransitionCollector(env, Left())
        collector.collect(n(3))
        assert type(collector.steps) is int
        episodes = EpisodeCollector(env, Left(), max_steps=n(500)).collect(n(2))
        assert len(episodes) == 2
    assert build_mlp([n(4), n(8), 2])[0].out_features == 8
    with Evaluator("CartPole-v1", every=n(10), max_steps=n(20), num_episodes=n(2)) as evaluator:
        assert type(evaluator.every) is int
    assert type(FrameViewer(n(5)).max_frames) is int
    assert OpponentPool(capacity=n(3)).capacity == 3
    assert record_video(Left(), "CartPole-v1", tmp_path, max_steps=n(2)).is_file()
    # a bool is still not a count
    for make in (lambda: ReplayBuffer(True), lambda: VecEnv("CartPole-v1", np.bool_(True))):
        with pytest.raises(ValueError, match="must be a positive int"):
            make()
    with pytest.raises(ValueError, match="capacity must be an int >= 1"):
        OpponentPool(capacity=True)
