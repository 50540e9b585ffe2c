"""Checks a teacher declares in a practical source, for a function the package does not know.

A teacher who adds a gap to a practical declares its check in the source, in a cell before
the gap, and calls it in the check cell after it, as for the package's own checks::

    check_normalize = Check(
        "normalize",
        cases=[
            Case("a batch", "subtract the mean, then divide by the standard deviation",
                 lambda g: {"advantages": torch.randn(8, generator=g) * 3.0 + 1.0}),
        ],
        probes={"the mean is not subtracted": lambda advantages: advantages / advantages.std()},
    )

Each :class:`Case` builds its inputs from a seeded ``torch.Generator``; the expected
outputs (and, for a loss, the gradients) come from the reference solution, the gap function
of the source. ``rl-mind practical`` computes them when it generates the notebooks, where
the reference is at hand, and writes them into the cell that declares the check, after
the declaration (``check_normalize.load("...")``): the student notebook holds the cases,
not the solution, and no file of the package is needed. The check then runs on the same
engine as the package's own checks (:mod:`rl_mind.checks.engine`): the same messages about
shapes, signs, sums, gradients and inputs changed in place, the case's hint, and the
teacher's ``probes``, each a named mistake.

What the reader must not get wrong: the declaration cell reaches the student notebook as
it is, so a probe written as a wrong answer shows its code there; where that code would
give the answer away, write the probe as an input change (:class:`Probe`) instead.
"""

from __future__ import annotations

import ast
import base64
import dataclasses
import inspect
import io
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import torch

from rl_mind.checks.engine import Case, Mistake, Probe, Spec, applies, run, unknown_cases
from rl_mind.checks.references import expected_data

__all__ = [
    "Check",
    "declared_checks",
    "declaration_ends",
    "decode_cases",
    "encode_cases",
    "load_code",
]

_KINDS = ("target", "loss", "losses")


class Check:
    """The check of a function a teacher adds to a practical: ``check_<function>(fn)``.

    - ``function``: the name of the gap function (its reference solution is the function
      of that name in the practical source);
    - ``cases``: :class:`Case` s, each with a name (shown to the student), a hint (the
      likely mistake when it is the first case that fails), ``inputs``, a function of a
      ``torch.Generator`` that returns the arguments by name (each parameter of the
      function, in any order: they are matched by name), and optionally a ``limit`` on a
      function that loops (:class:`~rl_mind.checks.limits.Limit`);
    - ``kind``: ``"target"`` (a tensor that must carry no gradient), ``"loss"`` (a
      scalar whose gradients are checked too) or ``"losses"`` (a tuple of scalars, named
      by ``outputs``);
    - ``grad_inputs``: the tensor arguments given with ``requires_grad=True`` (their
      gradients are compared for a loss);
    - ``probes``: named mistakes, message -> a wrong answer (a function with the same
      parameters: the message is shown when the student's result equals its result; a
      :class:`~rl_mind.checks.engine.Mistake` limits it to some cases) or a :class:`Probe`
      (an input change and a test on the two results, its ``base`` and ``cases`` kept);
    - ``points``: what the check cell is worth in an nbgrader assignment.

    What it cannot honour is refused: wrong arguments here (a ``TypeError`` or
    ``ValueError``), and, when ``rl-mind practical`` computes the cases (:meth:`generate`),
    inputs that are not the reference's parameters, a wrong answer that takes others, or a
    probe that does not return the inputs by name.

    Calling it prints ``✓`` when every case passes, else raises
    :class:`~rl_mind.checks.CheckFailure`. Its cases are computed from the reference by
    :meth:`generate` (``rl-mind practical`` does it) and carried by the notebook
    (:meth:`load`).
    """

    def __init__(
        self,
        function: str,
        cases: Sequence[Case],
        *,
        kind: str = "target",
        outputs: Sequence[str] = ("output",),
        grad_inputs: Sequence[str] = (),
        probes: Mapping[str, Callable[..., Any] | Probe | Mistake] | None = None,
        points: float = 1.0,
        sign_message: str | None = None,
    ) -> None:
        if not isinstance(function, str) or not function.isidentifier():
            raise TypeError(f"Check: function must be the gap function's name, got {function!r}")
        cases = tuple(cases)
        if not cases or not all(isinstance(case, Case) for case in cases):
            raise TypeError(f"Check({function!r}): cases must be a non-empty list of Case")
        for case in cases:
            if not callable(case.inputs):
                raise TypeError(
                    f"Check({function!r}): case {case.name!r} has no inputs; give "
                    f"Case(name, hint, inputs), inputs a function of a torch.Generator"
                )
        if kind not in _KINDS:
            raise ValueError(f"Check({function!r}): kind must be one of {_KINDS}, got {kind!r}")
        outputs = tuple(outputs)
        if (kind == "losses") != (len(outputs) > 1):
            raise ValueError(
                f"Check({function!r}): kind='losses' names two or more outputs, the other "
                f"kinds one; got kind={kind!r} and outputs={outputs!r}"
            )
        if isinstance(points, bool) or not isinstance(points, int | float) or not points > 0:
            raise ValueError(
                f"Check({function!r}): points must be a positive number, got {points!r}"
            )
        self.function = function
        self.cases = cases
        self.kind = kind
        self.outputs = outputs
        self.grad_inputs = tuple(grad_inputs)
        self.probes = tuple(
            _probe(function, message, probe) for message, probe in (probes or {}).items()
        )
        for probe in self.probes:
            unknown = unknown_cases(probe, cases)
            if unknown:
                raise ValueError(
                    f"Check({function!r}): the probe {probe.message!r} runs on the cases "
                    f"{unknown}, which are not declared; the cases are 1 to {len(cases)}: "
                    f"{[case.name for case in cases]}"
                )
        if sign_message is not None and not isinstance(sign_message, str):
            raise TypeError(
                f"Check({function!r}): sign_message must be a text, got {sign_message!r}"
            )
        self.points = float(points)
        self.sign_message = sign_message
        self._stored: list[dict[str, Any]] | None = None

    def __repr__(self) -> str:
        state = "its cases loaded" if self._stored is not None else "no cases yet"
        return f"Check({self.function!r}, {len(self.cases)} cases, {state})"

    def spec(self, args: Sequence[str]) -> Spec:
        """The engine's :class:`~rl_mind.checks.engine.Spec` of this check, for a function
        of the arguments ``args``."""
        spec = Spec(
            self.function,
            tuple(args),
            self.cases,
            lambda generator, i: self._inputs(i, generator),
            self.kind,
            None,
            outputs=self.outputs,
            grad_inputs=self.grad_inputs,
            probes=self.probes,
        )
        if self.sign_message is None:
            return spec
        return dataclasses.replace(spec, sign_message=self.sign_message)

    def _inputs(self, i: int, generator: torch.Generator) -> dict[str, Any]:
        case = self.cases[i]
        build = cast(Callable[[torch.Generator], Any], case.inputs)  # (checked in __init__)
        inputs = build(generator)
        if not isinstance(inputs, dict) or not all(isinstance(k, str) for k in inputs):
            raise TypeError(
                f"Check({self.function!r}): the inputs of case {case.name!r} must be a dict, "
                f"argument name -> value; got {type(inputs).__name__}"
            )
        return inputs

    def generate(self, reference: Callable[..., Any]) -> str:
        """Compute the cases from the ``reference`` solution, keep them, and return them
        encoded (what :meth:`load` takes).

        The inputs are matched to the reference's parameters by name (in any order in the
        case's dict; parameters with a default, at the end, may be left out); a case whose
        inputs are not the parameters, a wrong answer that does
        not take them, a probe whose change does not return them, or a limit over no input
        is a ``ValueError`` saying which."""
        if not callable(reference):
            raise TypeError(f"Check({self.function!r}): the reference must be a function")
        parameters = _parameters(self.function, reference, f"the reference {self.function}")
        built = [self._inputs(i, torch.Generator().manual_seed(0)) for i in range(len(self.cases))]
        args = parameters or tuple(built[0])
        if parameters:  # (parameters with a default, at the end, may be left out)
            given = [parameters.index(name) + 1 for name in built[0] if name in parameters]
            args = parameters[: max([_required(reference), *given])]
        for case, inputs in zip(self.cases, built):
            if set(inputs) != set(args):
                missing = [name for name in args if name not in inputs]
                extra = [name for name in inputs if name not in args]
                raise ValueError(
                    f"Check({self.function!r}): case {case.name!r} gives the inputs "
                    f"{tuple(inputs)}, but {self.function} takes ({', '.join(args)}): give one "
                    f"input per parameter, by its name"
                    + (f"; missing {missing}" if missing else "")
                    + (f"; not parameters {extra}" if extra else "")
                )
            if case.limit is not None and case.limit.over not in args:
                raise ValueError(
                    f"Check({self.function!r}): case {case.name!r} has a limit over "
                    f"{case.limit.over!r}, which is not a parameter of {self.function} {args}"
                )
        unknown = [name for name in self.grad_inputs if name not in args]
        if unknown:
            raise ValueError(
                f"Check({self.function!r}): grad_inputs {unknown} are not arguments of the "
                f"cases, which give {args}"
            )
        for probe in self.probes:
            if isinstance(probe, Mistake):
                taken = _parameters(
                    self.function, probe.function, f"the wrong answer {probe.message!r}"
                )
                if taken and len(taken) != len(args):
                    raise ValueError(
                        f"Check({self.function!r}): the wrong answer {probe.message!r} takes "
                        f"({', '.join(taken)}), but {self.function} takes ({', '.join(args)}): a "
                        f"wrong answer takes the same parameters as the function"
                    )
        spec = self.spec(args)
        # (the inputs in the order of the parameters: a case's dict may give them in any order)
        ordered = dataclasses.replace(
            spec, build=lambda generator, i: _ordered(self._inputs(i, generator), args)
        )
        cases = expected_data([ordered], {self.function: reference})[self.function]
        self._check_probes(args, cases)
        self._stored = cases
        return encode_cases(cases)

    def _check_probes(self, args: tuple[str, ...], cases: list[dict[str, Any]]) -> None:
        """Refuse a probe whose ``base`` or ``change`` does not return the inputs by name."""
        for probe in self.probes:
            if not isinstance(probe, Probe):
                continue
            for number, (case, stored) in enumerate(zip(self.cases, cases), start=1):
                if not applies(probe, number, case):
                    continue
                inputs = dict(stored["inputs"])
                for part in (probe.base, probe.change):
                    if part is None:
                        continue
                    try:
                        inputs = part(inputs)
                    except Exception as error:
                        raise ValueError(
                            f"Check({self.function!r}): the probe {probe.message!r} fails on "
                            f"case {case.name!r}: {type(error).__name__}: {error}"
                        ) from error
                    if not isinstance(inputs, dict) or set(inputs) != set(args):
                        got = tuple(inputs) if isinstance(inputs, dict) else type(inputs).__name__
                        raise ValueError(
                            f"Check({self.function!r}): the probe {probe.message!r} must return "
                            f"the inputs by name, {args} (e.g. {{**inputs, 'x': ...}}), got {got}"
                        )

    def load(self, encoded: str) -> None:
        """Take the cases computed by :meth:`generate` (in a generated notebook)."""
        cases = decode_cases(encoded)
        if len(cases) != len(self.cases):
            raise ValueError(
                f"check_{self.function}: {len(cases)} stored cases for {len(self.cases)} "
                f"declared; regenerate the notebook with `rl-mind practical`"
            )
        self._stored = cases

    def __call__(self, student_fn: Callable[..., Any]) -> None:
        """Run ``student_fn`` on every case: print ``✓`` when all pass, else raise
        :class:`~rl_mind.checks.CheckFailure` naming the first that fails."""
        if self._stored is None:
            raise RuntimeError(
                f"check_{self.function} has no cases yet: `rl-mind practical` computes them "
                f"from the reference solution when it generates the notebooks; run the "
                f"generated notebook (or call check_{self.function}.generate(reference))"
            )
        run(self.spec(tuple(self._stored[0]["inputs"])), student_fn, self._stored)


def _probe(
    function: str, message: str, probe: Callable[..., Any] | Probe | Mistake
) -> Probe | Mistake:
    if not isinstance(message, str) or not message.strip():
        raise TypeError(f"Check({function!r}): a probe is named by its message, got {message!r}")
    if isinstance(probe, Probe | Mistake):
        if probe.message and probe.message != message:
            raise ValueError(
                f"Check({function!r}): the probe {message!r} has a message of its own, "
                f"{probe.message!r}; a probe's message is its key in probes (leave the "
                f"Probe's own empty)"
            )
        return dataclasses.replace(probe, message=message)  # (its base and cases kept)
    if callable(probe):
        return Mistake(probe, message)
    raise TypeError(
        f"Check({function!r}): the probe {message!r} must be a wrong answer (a function), "
        f"a Probe or a Mistake, got {type(probe).__name__}"
    )


def _parameters(function: str, fn: Callable[..., Any], what: str) -> tuple[str, ...]:
    """The names of the positional parameters of ``fn`` (the reference, or a wrong answer)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # (a builtin: nothing to compare)
        return ()
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in signature.parameters.values()):
        return ()
    names = tuple(name for name, p in signature.parameters.items() if p.kind in kinds)
    if not names:
        raise ValueError(f"Check({function!r}): {what} takes no positional parameter")
    return names


def _required(fn: Callable[..., Any]) -> int:
    """How many positional parameters of ``fn`` have no default (they come first)."""
    return sum(
        1
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        and p.default is inspect.Parameter.empty
    )


def _ordered(inputs: dict[str, Any], args: tuple[str, ...]) -> dict[str, Any]:
    return {name: inputs[name] for name in args}


# ---------------------------------------------------------------------- the cases as text
def encode_cases(cases: list[dict[str, Any]]) -> str:
    """Stored cases as ASCII text (base64 of the compressed ``torch.save`` bytes)."""
    buffer = io.BytesIO()
    torch.save(cases, buffer)
    return base64.b64encode(zlib.compress(buffer.getvalue(), 9)).decode("ascii")


def decode_cases(encoded: str) -> list[dict[str, Any]]:
    """The cases of :func:`encode_cases`, read with ``weights_only=True`` (tensors and plain
    data only: loading them never runs code)."""
    try:
        raw = zlib.decompress(base64.b64decode(encoded, validate=True))
    except (ValueError, zlib.error) as error:
        raise ValueError(
            f"the stored cases are not readable ({error}); regenerate the notebook with "
            f"`rl-mind practical`"
        ) from None
    cases = torch.load(io.BytesIO(raw), weights_only=True)
    if not isinstance(cases, list) or not all(isinstance(case, dict) for case in cases):
        raise ValueError(f"the stored cases must be a list of dicts, got {type(cases).__name__}")
    return cases


def load_code(name: str, encoded: str, width: int = 76) -> str:
    """The code that loads the cases ``encoded`` into the check ``name`` (what the
    generator writes after the declaration)."""
    chunks = [encoded[i : i + width] for i in range(0, len(encoded), width)]
    lines = "\n".join(f'    "{chunk}"' for chunk in chunks)
    return (
        f"{name}.load(  # its cases, computed from the reference solution by rl-mind practical\n"
        f"{lines}\n)"
    )


# ---------------------------------------------------------------------- from a source
def _is_check(node: ast.stmt) -> bool:
    if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
        return False
    func = node.value.func
    return (isinstance(func, ast.Name) and func.id == "Check") or (
        isinstance(func, ast.Attribute) and func.attr == "Check"
    )


def declaration_ends(source: str) -> dict[str, int]:
    """The names that the code ``source`` (a cell) assigns a ``Check(...)`` to at top level,
    each with the last line (1 for the first) of its declaration: where its ``.load(...)``
    goes."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # (a cell of notebook magics)
        return {}
    return {
        target.id: int(node.end_lineno or node.lineno)
        for node in tree.body
        if _is_check(node)
        for target in cast(ast.Assign, node).targets
        if isinstance(target, ast.Name)
    }


def _not_declarable(where: str, error: Exception) -> ValueError:
    return ValueError(
        f"{where}: its checks are declared from its imports, functions, classes and check "
        f"declarations alone (the rest of the practical does not run), and these failed: "
        f"{type(error).__name__}: {error}"
    )


def declared_checks(text: str, where: str = "<source>") -> dict[str, tuple[Check, str]]:
    """The checks declared in a practical source (top-level ``check_<function> =
    Check(...)`` statements), with their cases computed from the reference solutions:
    variable name -> (the :class:`Check`, its cases encoded for :meth:`Check.load`).

    Only the source's top-level imports, function and class definitions and check
    declarations run (in the source's order), so that a case may use what the source
    imports and defines; the rest of the practical (the training) does not run.
    """
    tree = ast.parse(text, filename=where)
    declarations = [node for node in tree.body if _is_check(node)]
    if not declarations:
        return {}
    runnable = [
        node
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.ClassDef)
        or _is_check(node)
    ]
    namespace: dict[str, Any] = {}
    for node in runnable:
        try:
            exec(compile(ast.Module(body=[node], type_ignores=[]), where, "exec"), namespace)
        except (TypeError, ValueError) as error:
            if not _is_check(node):
                raise _not_declarable(where, error) from error
            # (what a Check, Case, Probe or Limit refuses: said where it is written)
            raise ValueError(f"{where}, line {node.lineno}: {error}") from error
        except Exception as error:
            raise _not_declarable(where, error) from error
    checks: dict[str, tuple[Check, str]] = {}
    for node in declarations:
        node = cast(ast.Assign, node)  # (_is_check)
        targets = [target.id for target in node.targets if isinstance(target, ast.Name)]
        check = namespace.get(targets[0]) if len(targets) == 1 == len(node.targets) else None
        if not isinstance(check, Check):
            raise ValueError(
                f"{where}, line {node.lineno}: assign a Check to one name, "
                f"check_<function> = Check('<function>', ...)"
            )
        name = targets[0]
        if name != f"check_{check.function}":
            raise ValueError(
                f"{where}, line {node.lineno}: the check of {check.function} must be named "
                f"check_{check.function} (the check cell calls check_{check.function}("
                f"{check.function})), not {name}"
            )
        reference = namespace.get(check.function)
        if not callable(reference):
            raise ValueError(
                f"{where}, line {node.lineno}: {name} checks {check.function}, but the source "
                f"defines no function {check.function} (its reference solution)"
            )
        try:
            checks[name] = (check, check.generate(reference))
        except (TypeError, ValueError) as error:
            raise ValueError(f"{where}, line {node.lineno}: {error}") from error
        except Exception as error:  # (a case that needs the rest of the practical, say)
            raise _not_declarable(where, error) from error
    return checks
