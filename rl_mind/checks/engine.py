"""The engine every check runs on: a gap's :class:`Spec`, its cases, and the verdict.

A practical's check module (``rl_mind/checks/dqn.py``) describes each gap with a
:class:`Spec`: the function's arguments, its cases (ordered so that each one adds a single
difficulty: one step, several steps, a terminal step, an episode boundary inside the
rollout, a truncation...), how to build each case's inputs, and what its outputs must
satisfy. ``spec.check(student_fn)`` runs the student's function on every case and

- prints one ``✓`` line and returns ``None`` when every case passes;
- raises :class:`CheckFailure` (an ``AssertionError``) at the first case that fails,
  saying what is wrong (values at which row, a sign error, a sum instead of a mean,
  gradients flowing into a target, an input changed in place...) and a hint, never the
  formula. "Run All" in a notebook stops there, and grading tools count a failed test.

The cases' inputs and expected outputs (and gradients) are *data*, stored beside the
practical's module (``dqn.pt``) and produced by running the reference solutions of the
practical source (:mod:`rl_mind.checks.references`); nothing here computes the right
answer. When a result is wrong, a spec's :class:`Probe` may call the function again on
changed inputs to name a mistake the values alone do not show (a loss that does not move
when the targets are shuffled compares every Q-value with every target), and a
:class:`Mistake` (a known wrong answer, in a check a teacher declares) names the mistake
whose result the student's equals. Each probe may be limited to the cases where its change
matters, so that it names its own mistake and never another. A case of a function that
loops until it converges carries a :class:`~rl_mind.checks.limits.Limit`: past it, the
case fails with "does not converge within N sweeps" (and the probe that tells why), so
that a check always returns. A policy whose best actions tie (``Spec.ties_from``) may put
its probability on any of them.

What the reader must not get wrong: a check never swallows the student's exceptions (a
``NotImplementedError`` from an unfilled gap, a shape error) — they propagate unchanged
(type and message: Run All stops there, a grading tool counts it). In a notebook IPython
shows such an exception as one ``✗`` line naming the function and what to do, and the line
of the student's code that raised it, never the check's own frames. The random state is
restored after a check.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from rl_mind.checks.inputs import changed_parts, materialize
from rl_mind.checks.limits import Exhausted, Limit, bounded_call

__all__ = [
    "Case",
    "CheckFailure",
    "Limit",
    "Mistake",
    "Probe",
    "Spec",
    "different_result",
    "gamma_halved",
    "not_moved_by_one",
    "run",
    "same_result",
    "unknown_cases",
]

_ATOL, _RTOL = 1e-5, 1e-4

NO_GRAD_TARGET = (
    "the result carries gradients, but it is a target: compute it under torch.no_grad() "
    "(or .detach() it) so that the loss does not push the target around"
)
TERMINAL = (
    "a terminal step (terminated=True) has no future: do not bootstrap from the next state "
    "there (mask the bootstrap with the terminated flag)"
)


class CheckFailure(AssertionError):
    """A check found the student's function wrong. The message names the function, the
    first failing case, what is wrong and (where it helps) a hint.

    An ``AssertionError``, so that a grading tool (nbgrader) counts the check cell as a
    failed test; in a notebook it shows as the ``✗`` message alone, without the check's
    own traceback (the student's code is not in it).
    """

    def _render_traceback_(self) -> list[str]:
        # IPython shows these lines instead of a traceback for exceptions that define this
        return [
            f"\x1b[0;31m✗ {line}\x1b[0m" if i == 0 else line
            for i, line in enumerate(str(self).split("\n"))
        ]


@dataclass(frozen=True)
class Case:
    """One prepared case: ``name`` says what it contains (shown to the student), ``hint``
    the likely mistake when it is the first case that fails.

    ``inputs`` builds the case's inputs from a seeded ``torch.Generator`` (a dict, argument
    name -> value); a :class:`Check` declared in a practical source needs it, a package
    module's :class:`Spec` builds its cases itself. ``limit`` bounds each call of the
    student's function on the case (sweeps over an input, and time:
    :class:`~rl_mind.checks.limits.Limit`), for a function that loops until it converges.
    """

    name: str
    hint: str
    inputs: Callable[[torch.Generator], dict[str, Any]] | None = None
    limit: Limit | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not isinstance(self.hint, str):
            raise TypeError(
                f"Case(name, hint, inputs): name and hint are texts, got {self.name!r} and "
                f"{self.hint!r}"
            )
        if self.inputs is not None and not callable(self.inputs):
            raise TypeError(
                f"Case {self.name!r}: inputs must be a function of a torch.Generator, got "
                f"{type(self.inputs).__name__}"
            )
        if self.limit is not None and not isinstance(self.limit, Limit):
            raise TypeError(f"Case {self.name!r}: limit must be a Limit, got {self.limit!r}")


def _checked_cases(owner: str, cases: Any) -> tuple[int | str, ...]:
    cases = (cases,) if isinstance(cases, int | str) else tuple(cases)
    for case in cases:
        if (
            isinstance(case, bool)
            or not isinstance(case, int | str)
            or (isinstance(case, int) and case < 1)
        ):
            raise TypeError(
                f"{owner}: cases are case numbers (1 for the first, as the check prints them) or "
                f"case names, got {case!r}"
            )
    return cases


@dataclass(frozen=True)
class Probe:
    """A second call of the student's function on changed inputs, made when a case's
    values are wrong: if ``fires(result, result_on_changed_inputs)``, ``message`` replaces
    the case's hint.

    ``change`` maps the case's stored inputs to new stored inputs (it must not modify
    them); ``fires`` compares the first outputs of the two calls. With ``base``, the first
    call is made on ``base(stored)`` (inputs chosen to show the mistake, e.g. a ratio in a
    given range) and the second on ``change(base(stored))``. ``cases`` limits the probe to
    some cases (their numbers, 1 for the first, or their names); by default it runs on
    every failing case. A change that changes nothing tells nothing: the probe is then
    skipped. Where a case's call does not return within its limit, only the probes with a
    ``base`` run (they call the function on their own inputs).
    """

    change: Callable[[dict[str, Any]], dict[str, Any]]
    fires: Callable[[Tensor, Tensor], bool]
    message: str = ""
    base: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    cases: tuple[int | str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("change", "fires"):
            if not callable(getattr(self, name)):
                raise TypeError(
                    f"Probe(change, fires): {name} must be a function, got "
                    f"{type(getattr(self, name)).__name__}"
                )
        if self.base is not None and not callable(self.base):
            raise TypeError(f"Probe: base must be a function, got {type(self.base).__name__}")
        if not isinstance(self.message, str):
            raise TypeError(f"Probe: message must be a text, got {self.message!r}")
        object.__setattr__(self, "cases", _checked_cases("Probe", self.cases))


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer: when a case's values are wrong and equal what ``function``
    (called with the same arguments as the student's) returns on that case, ``message``
    replaces the case's hint. It names the mistake; its code is the teacher's, never
    printed. ``cases`` limits it to some cases, as for :class:`Probe`."""

    function: Callable[..., Any]
    message: str = ""
    cases: tuple[int | str, ...] = ()

    def __post_init__(self) -> None:
        if not callable(self.function):
            raise TypeError(
                f"Mistake: function must be a wrong answer (a function), got "
                f"{type(self.function).__name__}"
            )
        object.__setattr__(self, "cases", _checked_cases("Mistake", self.cases))


def applies(probe: Probe | Mistake, number: int, case: Case) -> bool:
    """Whether ``probe`` runs on the case ``case``, number ``number`` (1 for the first)."""
    return not probe.cases or number in probe.cases or case.name in probe.cases


def unknown_cases(probe: Probe | Mistake, cases: Sequence[Case]) -> list[int | str]:
    """The cases that ``probe`` names (:attr:`Probe.cases`) and ``cases`` does not hold: a
    number past the last case, or a name no case has."""
    names = [case.name for case in cases]
    return [
        case
        for case in probe.cases
        if (isinstance(case, int) and case > len(cases))
        or (isinstance(case, str) and case not in names)
    ]


def same_result(result: Tensor, changed: Tensor) -> bool:
    """A :attr:`Probe.fires` test: the change of input did not change the result."""
    return close(result, changed)


def different_result(result: Tensor, changed: Tensor) -> bool:
    """A :attr:`Probe.fires` test: the change of input changed the result."""
    return not close(result, changed)


def not_moved_by_one(result: Tensor, changed: Tensor) -> bool:
    """A :attr:`Probe.fires` test: the change of input (one added to the rewards) did not
    add one to every entry of the result."""
    return not close(changed - result, torch.ones_like(result))


def gamma_halved(stored: dict[str, Any]) -> dict[str, Any]:
    """A :attr:`Probe.change`: the inputs with the discount ``gamma`` halved."""
    return {**stored, "gamma": 0.5 * stored["gamma"]}


@dataclass(frozen=True)
class Spec:
    """One gap: how to call it, its cases, and what its outputs must satisfy.

    ``kind``: ``"target"`` (a tensor without gradient), ``"loss"`` (a scalar whose
    gradients are checked too), ``"losses"`` (a tuple of them, named by ``outputs``) or
    ``"inplace"`` (returns nothing; the inputs named in ``changes`` must end as stored).
    ``data`` is the practical's data file (None for a :class:`~rl_mind.checks.Check`
    declared in a practical source, whose cases travel with the notebook). The ``*_messages`` dicts, keyed by ``(output,
    input)``, replace the generic messages about gradients that must be zero, must exist,
    or are wrong while the value is right; ``changed_messages``, keyed by argument, the
    message about an input changed in place (``{name}`` is the part that changed);
    ``axes`` the letters that name the output's dimensions in messages (``"sa"`` for a
    ``[S, A]`` table; by default ``t, b`` or ``n``). ``ties_from`` names the gap function
    (same arguments) whose output scores each entry of this one's, a policy ``[S, A]``: a
    row whose best score is shared (a tie) may put its probability on any of the best
    entries, or split it between them; ``tie_message`` is what a tied row whose
    probabilities do not sum to 1 is told.
    """

    function: str
    args: tuple[str, ...]
    cases: tuple[Case, ...]
    build: Callable[[torch.Generator, int], dict[str, Any]]  # (generator, case) -> inputs
    kind: str
    data: Path | None
    outputs: tuple[str, ...] = ("output",)
    grad_inputs: tuple[str, ...] = ()  # tensors given with requires_grad=True
    probes: tuple[Probe | Mistake, ...] = ()
    changes: tuple[str, ...] = ()  # the inputs the function is meant to change in place
    no_grad_messages: dict[tuple[str, str], str] = field(default_factory=dict)
    grad_messages: dict[tuple[str, str], str] = field(default_factory=dict)
    wrong_grad_messages: dict[tuple[str, str], str] = field(default_factory=dict)
    changed_messages: dict[str, str] = field(default_factory=dict)
    sign_message: str = "the result has the opposite sign of what it should be (a sign error)"
    axes: str = ""  # the letters naming the output's dimensions in messages (default t, b or n)
    ties_from: str | None = None
    tie_message: str = (
        "{row} has a tie ({tied} entries share the best score) and puts a total of {total:.4g} "
        "on them: its probabilities must sum to 1 (one of the best entries, or the 1 split "
        "between them)"
    )

    def __post_init__(self) -> None:
        for probe in self.probes:
            unknown = unknown_cases(probe, self.cases)
            if unknown:
                raise ValueError(
                    f"{self.function}: a probe names the cases {unknown}, which do not exist; "
                    f"the cases are 1 to {len(self.cases)}: {[case.name for case in self.cases]}"
                )

    def check(self, student_fn: Callable[..., Any]) -> None:
        """Run ``student_fn`` on every case: print ``✓`` when all pass, else raise
        :class:`CheckFailure` at the first that fails."""
        run(self, student_fn, load_cases(self))


def run(spec: Spec, student_fn: Callable[..., Any], cases: Sequence[dict[str, Any]]) -> None:
    """Run ``student_fn`` on the stored ``cases`` of ``spec`` (one ``{"inputs",
    "expected"}`` per case of ``spec.cases``): print ``✓`` when all pass, else raise
    :class:`CheckFailure` at the first that fails."""
    if not callable(student_fn):
        raise TypeError(
            f"check_{spec.function} expects your function {spec.function}, got {student_fn!r}"
        )
    torch_state = torch.random.get_rng_state()
    try:
        for i, (case, stored) in enumerate(zip(spec.cases, cases)):
            try:
                _run_case(spec, student_fn, stored, i + 1, case)
            except _Mismatch as mismatch:
                hint = f"\n  Hint: {case.hint}." if mismatch.hint else ""
                raise CheckFailure(
                    f"{spec.function}: case {i + 1}/{len(cases)} ({case.name}) fails: "
                    f"{mismatch}{hint}"
                ) from None
            except Exception as error:
                _shown_as_students(error, spec.function, f"case {i + 1}/{len(cases)}")
                raise
    finally:
        torch.random.set_rng_state(torch_state)
    passed = f"all {len(cases)} cases" if len(cases) > 1 else "its case"
    print(f"✓ {spec.function} passes {passed}")


def _student_frames(error: BaseException) -> list[Any]:
    """The frames of ``error``'s traceback that are the student's code: neither this
    package's nor an installed library's (torch) nor the standard library's."""
    import sysconfig

    library = {str(Path(__file__).resolve().parent.parent)}  # rl_mind/
    for scheme in (sysconfig.get_paths(), sysconfig.get_paths(vars={"base": sys.base_prefix})):
        library.update(scheme[key] for key in ("stdlib", "purelib", "platlib") if key in scheme)
    frames = []
    traceback = error.__traceback__
    while traceback is not None:
        name = traceback.tb_frame.f_code.co_filename
        if not name.startswith("<frozen") and not any(name.startswith(p) for p in library):
            frames.append(traceback)
        traceback = traceback.tb_next
    return frames


def _shown_as_students(error: Exception, function: str, case: str) -> None:
    """Make IPython show an exception raised in the student's code (a gap still to fill, a
    shape error) as one ``✗`` line that names the function and says what to do, and where
    in the student's code it was raised, instead of a traceback through the check's own
    frames. The exception itself (its type, its message) is unchanged."""
    frames = _student_frames(error)
    if not frames:
        return  # not the student's: the full traceback is what the teacher needs
    raised_at = frames[-1]
    message = str(error).strip().split("\n")[0]
    kind = type(error).__name__
    # a gap still to fill: a NotImplementedError raised by the student's own code (one that
    # torch raises is an error like any other)
    if isinstance(error, NotImplementedError) and raised_at.tb_next is None:
        where = raised_at.tb_frame.f_code.co_name
        name = function if where == "<module>" else where
        lines = [
            f"{name} is not written yet ({kind}: {message or 'no message'}): write it under "
            f"YOUR CODE HERE, run its cell, then this check again"
        ]
    else:
        import linecache

        code = raised_at.tb_frame.f_code
        text = linecache.getline(code.co_filename, raised_at.tb_lineno).strip()
        lines = [
            f"{function} raised {kind} on {case}: {message}. Fix {function}, run its cell, "
            f"then this check again",
            f"  in {code.co_name}, line {raised_at.tb_lineno}: {text}",
        ]
    lines[0] = f"\x1b[0;31m✗ {lines[0]}\x1b[0m"
    # IPython shows these lines instead of a traceback, as for a CheckFailure (an exception
    # type with __slots__ takes no attribute: it keeps its traceback)
    with contextlib.suppress(AttributeError):
        error._render_traceback_ = lambda: lines  # type: ignore[attr-defined]


# ---------------------------------------------------------------------- the check data
@cache
def _load(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise FileNotFoundError(
            f"the check data {path} is missing; regenerate it from the practical source with "
            f"`python -m rl_mind.checks notebooks/src/{path.stem}.py`"
        )
    data: dict[str, Any] = torch.load(path, weights_only=True)
    return data


def load_cases(spec: Spec) -> list[dict[str, Any]]:
    """The stored ``{"inputs", "expected"}`` of each case of ``spec``."""
    if spec.data is None:
        raise ValueError(f"{spec.function}: this check keeps its cases itself (no data file)")
    cases: list[dict[str, Any]] = _load(spec.data)[spec.function]
    return cases


def clear_cache() -> None:
    """Forget the loaded data files (after regenerating them)."""
    _load.cache_clear()


# ---------------------------------------------------------------------- calling
def build_inputs(spec: Spec, stored: dict[str, Any]) -> dict[str, Any]:
    """Live inputs of one call, fresh from the stored ones."""
    return {name: materialize(stored[name], name in spec.grad_inputs) for name in spec.args}


def call(
    spec: Spec, fn: Callable[..., Any], inputs: dict[str, Any], limit: Limit | None = None
) -> Any:
    """``fn`` called with ``inputs`` in the order of ``spec.args``, within ``limit`` (else
    :class:`~rl_mind.checks.limits.Exhausted`) when there is one."""
    args = [inputs[name] for name in spec.args]
    if limit is None:
        return fn(*args)
    return bounded_call(fn, args, inputs.get(limit.over), limit)


def grad_input_names(spec: Spec, inputs: dict[str, Any]) -> list[str]:
    """The inputs whose gradients are compared: every network, and ``grad_inputs``."""
    networks = [name for name in spec.args if isinstance(inputs[name], nn.Module)]
    return ([] if spec.kind == "inplace" else networks) + list(spec.grad_inputs)


def gradients(output: Tensor, inputs: dict[str, Any], names: Sequence[str]) -> dict[str, Tensor]:
    """Flattened gradients of ``output`` w.r.t. each named input (zeros where unused)."""
    result: dict[str, Tensor] = {}
    for name in names:
        value = inputs[name]
        leaves: list[Tensor]
        if isinstance(value, nn.Module):
            leaves = list(value.parameters())
        elif isinstance(value, Tensor) and value.requires_grad:
            leaves = [value]
        else:
            continue
        if not output.requires_grad:
            result[name] = torch.cat([torch.zeros(leaf.numel()) for leaf in leaves])
            continue
        grads = torch.autograd.grad(output, leaves, retain_graph=True, allow_unused=True)
        result[name] = torch.cat(
            [
                (torch.zeros(leaf.numel()) if grad is None else grad.detach().reshape(-1))
                for leaf, grad in zip(leaves, grads)
            ]
        )
    return result


def outputs_of(spec: Spec, result: Any) -> dict[str, Any]:
    """The function's result by output name."""
    if len(spec.outputs) == 1:
        return {spec.outputs[0]: result}
    if not isinstance(result, tuple | list) or len(result) != len(spec.outputs):
        length = f" of length {len(result)}" if isinstance(result, tuple | list) else ""
        raise _Mismatch(
            f"expected a tuple ({', '.join(spec.outputs)}), got {type(result).__name__}{length}"
        )
    return dict(zip(spec.outputs, result))


# ---------------------------------------------------------------------- comparing
class _Mismatch(Exception):
    """What is wrong with the student's result on one case; ``hint``: whether the case's
    hint helps (it is about values, not about gradients, signs or shapes)."""

    def __init__(self, message: str, hint: bool = True) -> None:
        super().__init__(message)
        self.hint = hint


def close(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and torch.allclose(a.double(), b.double(), atol=_ATOL, rtol=_RTOL)


def _broadcast(square: Tensor) -> bool:
    """Whether an ``[n, n]`` result is what combining an ``[n, 1]`` tensor with an ``[n]``
    one gives (``x[i, j] = f(a[i], b[j])`` for a sum or a product): then its rows differ
    from the first one by multiples of one vector (or its columns from the first column)."""
    if not square.is_floating_point() or not torch.isfinite(square).all():
        return True  # (nothing to tell them apart: the common case)
    value = square.double()
    scale = float(value.abs().max()) or 1.0
    for spread in (value - value[:1], value - value[:, :1]):
        singular = torch.linalg.svdvals(spread / scale)  # (float32 results: a loose rank)
        if len(singular) < 2 or float(singular[1]) <= 1e-5 * max(float(singular[0]), 1e-12):
            return True
    return False


def _describe_row(stored: dict[str, Any], index: tuple[int, ...], axes: str = "") -> str:
    words = []
    for flag in ("terminated", "truncated"):
        flags = stored.get(flag)
        for value in stored.values():  # (a batch or an EnvStep holds them)
            if flags is None and isinstance(value, dict):
                flags = value.get(flag)
        if isinstance(flags, Tensor) and flags.dim() == len(index) and bool(flags[index]):
            words.append(f"{flag}=True")
    axes = axes or ("tb" if len(index) == 2 else "n")
    position = ", ".join(f"{axis}={i}" for axis, i in zip(axes, index))
    return f"[{position}]" + (f" ({', '.join(words)})" if words else "")


def _batch_size(stored: dict[str, Any]) -> int | None:
    for value in stored.values():
        if isinstance(value, Tensor) and value.dim() >= 1:
            return int(value.shape[0])
        if isinstance(value, dict) and "__transitions__" in value:
            return int(value["reward"].shape[0])
    return None


def _compare_value(
    name: str, got: Any, expected: Tensor, spec: Spec, stored: dict[str, Any]
) -> None:
    label = "" if name == "output" else f"{name}: "
    if got is None:
        raise _Mismatch(f"{label}the function returned None: did you forget `return`?")
    if not isinstance(got, Tensor):
        raise _Mismatch(f"{label}expected a torch.Tensor, got {type(got).__name__}")
    if spec.kind in ("loss", "losses") and got.dim() != 0:
        raise _Mismatch(
            f"{label}a loss must be a scalar (0-d) tensor, got shape {list(got.shape)}: "
            f"average over the batch (.mean())"
        )
    if got.shape != expected.shape:
        message = f"{label}expected shape {list(expected.shape)}, got {list(got.shape)}"
        if expected.dim() == 1 and list(got.shape) == [len(expected)] * 2:
            size = len(expected)
            if _broadcast(got.detach()):
                message += (
                    f": a [{size}, 1] tensor combined with a [{size}] one broadcasts to "
                    f"[{size}, {size}]; make both [{size}] (.squeeze(-1) the [{size}, 1] one)"
                )
            else:
                message += (
                    f": one value per row is expected, and this result pairs every row with "
                    f"every other: indexing the columns of a [{size}, ...] tensor with "
                    f"{size} indices, after its rows were picked, takes every (row, column) "
                    f"pair; pick one entry per row, rows and columns indexed together"
                )
        raise _Mismatch(message, hint=False)
    if not got.is_floating_point():
        raise _Mismatch(f"{label}expected a floating-point tensor, got {got.dtype}")
    if not torch.isfinite(got).all():
        raise _Mismatch(f"{label}the result contains NaN or infinite values")
    got = got.detach()
    if close(got, expected):
        return
    if close(got, -expected) and expected.abs().max() > 1e-3:
        raise _Mismatch(f"{label}{spec.sign_message}", hint=False)
    if expected.dim() == 0 and abs(float(expected)) > 1e-6:
        ratio = float(got) / float(expected)
        n = _batch_size(stored)
        if n and math.isclose(ratio, n, rel_tol=1e-3):
            raise _Mismatch(
                f"{label}the loss is {n} times too large: average over the batch (mean), do not sum",
                hint=False,
            )
        if math.isclose(ratio, 2.0, rel_tol=1e-3) or math.isclose(ratio, 0.5, rel_tol=1e-3):
            raise _Mismatch(f"{label}the loss is off by a factor {ratio:g}: check the 1/2 factors")
        raise _Mismatch(f"{label}wrong value: got {float(got):.5g}, expected {float(expected):.5g}")
    wrong = (~torch.isclose(got.double(), expected.double(), atol=_ATOL, rtol=_RTOL)).nonzero()
    first = tuple(int(i) for i in wrong[0])
    raise _Mismatch(
        f"{label}{len(wrong)} of {expected.numel()} values are wrong; first at "
        f"{_describe_row(stored, first, spec.axes)}: got {float(got[first]):.5g}, expected "
        f"{float(expected[first]):.5g}"
    )


def _compare_grads(
    spec: Spec, output: str, got: dict[str, Tensor], expected: dict[str, Tensor]
) -> None:
    label = "" if output == "output" else f"{output}: "
    for name, want in expected.items():
        have = got.get(name, torch.zeros_like(want))
        want_zero = bool(want.abs().max() <= 1e-7) if want.numel() else True
        have_zero = bool(have.abs().max() <= 1e-7) if have.numel() else True
        if want_zero and not have_zero:
            message = spec.no_grad_messages.get(
                (output, name),
                f"gradients flow into {name}, which must be a constant here "
                f"(detach it or use torch.no_grad())",
            )
        elif have_zero and not want_zero:
            message = spec.grad_messages.get(
                (output, name),
                f"no gradient reaches {name}: something is detached (or computed under "
                f"torch.no_grad()) that must carry gradients",
            )
        elif not close(have, want):
            message = spec.wrong_grad_messages.get(
                (output, name),
                f"the value is right but the gradient with respect to {name} is not: "
                f"something that must be a constant carries gradients (or the other way round)",
            )
        else:
            continue
        raise _Mismatch(label + message, hint=False)


def _check_unchanged(spec: Spec, inputs: dict[str, Any], stored: dict[str, Any]) -> None:
    """Refuse a function that changed an input it was not meant to change."""
    for name in spec.args:
        if name in spec.changes:
            continue
        parts = changed_parts(name, inputs[name], stored[name])
        if parts:
            message = spec.changed_messages.get(
                name,
                "{name} was changed in place (an in-place operation on it: `+=`, `add_`, an "
                "indexed assignment...); the caller still needs it as it was: compute into "
                "a new tensor instead (`x = x + ...`, torch.zeros_like)",
            )
            raise _Mismatch(message.format(name=parts[0]), hint=False)


def _same_outputs(result: Any, other: Any) -> bool:
    """Whether two results (a tensor, or a tuple of them) hold the same values."""
    if isinstance(result, tuple | list):
        return (
            isinstance(other, tuple | list)
            and len(result) == len(other)
            and all(_same_outputs(a, b) for a, b in zip(result, other))
        )
    return (
        isinstance(result, Tensor)
        and isinstance(other, Tensor)
        and close(result.detach(), other.detach())
    )


def _same_stored(a: Any, b: Any) -> bool:
    """Whether two stored inputs are equal (tensors, dicts, lists, plain values)."""
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return isinstance(a, Tensor) and isinstance(b, Tensor) and torch.equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_stored(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same_stored(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _first(result: Any) -> Any:
    return result[0] if isinstance(result, tuple | list) else result


def _probe(
    spec: Spec,
    student_fn: Callable[..., Any],
    stored: dict[str, Any],
    result: Any,
    number: int,
    case: Case,
) -> str | None:
    """The message of the first probe that fires on this wrong result, if any. ``result``
    None: the call did not return within the case's limit, and only the probes with a
    ``base`` (which call the function on inputs of their own) can tell why."""
    for probe in spec.probes:
        if not applies(probe, number, case):
            continue
        if result is None and (isinstance(probe, Mistake) or probe.base is None):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if isinstance(probe, Mistake):
                    wrong = call(spec, probe.function, build_inputs(spec, stored))
                    if _same_outputs(result, wrong):
                        return probe.message
                    continue
                before, first = stored, _first(result)
                if probe.base is not None:
                    before = probe.base(stored)
                    inputs = build_inputs(spec, before)
                    first = _first(call(spec, student_fn, inputs, case.limit))
                changed = probe.change(before)
                if _same_stored(changed, before):
                    continue
                again = _first(call(spec, student_fn, build_inputs(spec, changed), case.limit))
        # (a probe only chooses the message: the case has failed already)
        except (Exception, Exhausted):
            continue
        if (
            isinstance(first, Tensor)
            and isinstance(again, Tensor)
            and first.shape == again.shape
            and probe.fires(first.detach(), again.detach())
        ):
            return probe.message
    return None


def _settle_ties(spec: Spec, got: Any, expected: dict[str, Any], stored: dict[str, Any]) -> Any:
    """``got`` with each tied row that is right (its probability on the best entries of the
    row, summing to 1) replaced by the reference's row, so that the comparison that follows
    sees only the rows that are wrong; a tied row on the best entries that does not sum to
    1 is named."""
    scores = expected.get("scores")
    want = expected["outputs"][spec.outputs[0]]
    if (
        not isinstance(got, Tensor)
        or not isinstance(scores, Tensor)
        or got.shape != want.shape
        or not got.is_floating_point()
        or got.dim() != 2
    ):
        return got
    value = got.detach().double()
    scores = scores.double()
    best = scores >= scores.max(dim=1, keepdim=True).values - _ATOL
    on_best = ((value.abs() <= _ATOL) | best).all(dim=1) & (value >= -_ATOL).all(dim=1)
    total = value.sum(dim=1)
    tied = best.sum(dim=1) > 1
    for row in (tied & on_best & ((total - 1.0).abs() > _ATOL)).nonzero().flatten().tolist():
        where = _describe_row(stored, (row,), spec.axes[:1])
        message = spec.tie_message.format(
            row=where, tied=int(best[row].sum()), total=float(total[row])
        )
        raise _Mismatch(message, hint=False)
    settled = torch.where((tied & on_best).unsqueeze(1), want.double(), value)
    return settled.to(got.dtype)


def _check_order(spec: Spec, outputs: dict[str, Any], expected: dict[str, Tensor]) -> None:
    """Name a tuple whose results are all right but in another order."""
    if len(spec.outputs) < 2 or not all(isinstance(value, Tensor) for value in outputs.values()):
        return
    got = [outputs[name].detach() for name in spec.outputs]
    if all(close(value, expected[name]) for value, name in zip(got, spec.outputs)):
        return
    for order in itertools.permutations(spec.outputs):
        if all(close(value, expected[name]) for value, name in zip(got, order)):
            raise _Mismatch(
                f"the results are right but in the wrong order: you returned "
                f"({', '.join(order)}); return ({', '.join(spec.outputs)}), in that order",
                hint=False,
            )


def _run_case(
    spec: Spec, student_fn: Callable[..., Any], stored: dict[str, Any], number: int, case: Case
) -> None:
    inputs = build_inputs(spec, stored["inputs"])
    expected = stored["expected"]
    try:
        result = call(spec, student_fn, inputs, case.limit)
    except Exhausted as exhausted:  # (only a call with a limit ends this way)
        said = case.limit.describe(exhausted.reason) if case.limit else str(exhausted)
        message = _probe(spec, student_fn, stored["inputs"], None, number, case)
        if message is None:
            raise _Mismatch(said) from None
        raise _Mismatch(f"{said}: {message}", hint=False) from None
    _check_unchanged(spec, inputs, stored["inputs"])
    if spec.kind == "inplace":
        for name in spec.changes:
            for i, (module, want) in enumerate(zip(inputs[name], expected[name])):
                for key, value in module.state_dict().items():
                    if not close(value, want[key]):
                        raise _Mismatch(f"{name}[{i}] has wrong parameters ({key})")
        return
    outputs = outputs_of(spec, result)
    if spec.ties_from is not None:
        name = spec.outputs[0]
        outputs[name] = _settle_ties(spec, outputs[name], expected, stored["inputs"])
    _check_order(spec, outputs, expected["outputs"])
    for name in spec.outputs:
        try:
            _compare_value(name, outputs[name], expected["outputs"][name], spec, stored["inputs"])
        except _Mismatch as mismatch:
            message = (
                _probe(spec, student_fn, stored["inputs"], result, number, case)
                if mismatch.hint
                else None
            )
            if message is None:
                raise
            raise _Mismatch(message, hint=False) from None
        if spec.kind == "target" and outputs[name].requires_grad:
            raise _Mismatch(NO_GRAD_TARGET, hint=False)
    if spec.kind in ("loss", "losses"):
        names = grad_input_names(spec, inputs)
        for name in spec.outputs:
            got = gradients(outputs[name], inputs, names)
            _compare_grads(spec, name, got, expected["grads"][name])
