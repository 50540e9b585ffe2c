"""Producing the checks' data from the reference solutions of the practical sources.

``python -m rl_mind.checks notebooks/src/dqn.py`` reads the reference solutions of the
gaps (the functions holding a ``### BEGIN SOLUTION`` region), runs each on its cases, and
writes the inputs and expected outputs (and gradients) beside the practical's check module
(``rl_mind/checks/dqn.pt``). A test compares the stored data with a fresh run, so that a
changed reference solution cannot leave the checks behind.
"""

from __future__ import annotations

import ast
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from rl_mind.checks.engine import (
    Spec,
    build_inputs,
    call,
    clear_cache,
    grad_input_names,
    gradients,
    outputs_of,
)

__all__ = ["expected_data", "reference_functions", "regenerate"]


def reference_functions(
    sources: Sequence[str | Path], specs: dict[str, Spec]
) -> dict[str, Callable[..., Any]]:
    """The gap functions defined in practical sources (the reference solutions).

    A gap function is a top-level ``def`` whose body holds a ``### BEGIN SOLUTION`` marker
    and whose name is a key of ``specs``. The source's top-level imports are executed
    first; no other code of the practical runs.
    """
    found: dict[str, Callable[..., Any]] = {}
    for source in map(Path, sources):
        text = source.read_text(encoding="utf-8")
        lines = text.split("\n")
        tree = ast.parse(text, filename=str(source))
        imports: list[ast.stmt] = [
            n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)
        ]
        namespace: dict[str, Any] = {}
        exec(compile(ast.Module(body=imports, type_ignores=[]), str(source), "exec"), namespace)
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef) or node.name not in specs:
                continue
            body = lines[node.lineno - 1 : node.end_lineno]
            if not any(line.strip().startswith("### BEGIN SOLUTION") for line in body):
                continue
            module = ast.Module(body=[node], type_ignores=[])
            exec(compile(module, str(source), "exec"), namespace)
            found[node.name] = namespace[node.name]
    return found


def _expected_record(
    spec: Spec, stored: dict[str, Any], references: dict[str, Callable[..., Any]]
) -> dict[str, Any]:
    """Run the reference of ``spec`` on one case: its outputs (and gradients, for losses;
    the scores of ``spec.ties_from``, where ties are allowed)."""
    inputs = build_inputs(spec, stored)
    result = call(spec, references[spec.function], inputs)
    if spec.kind == "inplace":
        return {name: [m.state_dict() for m in inputs[name]] for name in spec.changes}
    outputs = outputs_of(spec, result)
    record: dict[str, Any] = {"outputs": {k: v.detach().clone() for k, v in outputs.items()}}
    if spec.ties_from is not None:
        scores = call(spec, references[spec.ties_from], build_inputs(spec, stored))
        record["scores"] = scores.detach().clone()
    if spec.kind in ("loss", "losses"):
        names = grad_input_names(spec, inputs)
        record["grads"] = {k: gradients(v, inputs, names) for k, v in outputs.items()}
    return record


def expected_data(
    specs: Sequence[Spec], references: dict[str, Callable[..., Any]]
) -> dict[str, list[dict[str, Any]]]:
    """The inputs and expected outputs of every case of ``specs`` (one practical's data)."""
    needed = {spec.function for spec in specs} | {
        spec.ties_from for spec in specs if spec.ties_from is not None
    }
    missing = sorted(name for name in needed if name not in references)
    if missing:
        raise ValueError(f"no reference solution for {missing}; pass the practical's source")
    data: dict[str, list[dict[str, Any]]] = {}
    for spec in specs:
        cases = []
        for i in range(len(spec.cases)):
            # a seed per function and case: adding a case or a practical changes no other data
            seed = zlib.crc32(f"{spec.function}/{i}".encode())
            inputs = spec.build(torch.Generator().manual_seed(seed), i)
            expected = _expected_record(spec, inputs, references)
            cases.append({"inputs": inputs, "expected": expected})
        data[spec.function] = cases
    return data


def regenerate(sources: Sequence[str | Path], specs: dict[str, Spec]) -> list[Path]:
    """Write the data of every practical whose gaps are defined in ``sources``; returns the
    files written. A practical with only some of its gaps in the sources is an error."""
    references = reference_functions(sources, specs)
    by_file: dict[Path, list[Spec]] = {}
    for spec in specs.values():
        if spec.data is not None:
            by_file.setdefault(spec.data, []).append(spec)
    written = []
    for path, practical in by_file.items():
        if not any(spec.function in references for spec in practical):
            continue
        data = expected_data(practical, references)
        temp = path.with_name(f".{path.name}.tmp")
        torch.save(data, temp)
        temp.replace(path)
        written.append(path)
    if not written:
        raise ValueError("no gap of any practical is defined in the given sources")
    clear_cache()
    return written
