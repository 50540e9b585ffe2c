"""Griffe extension: the package's docstrings name other objects with Sphinx roles
(``:class:`Episode```, ``:meth:`~rl_mind.env.VecEnv.step```); on the site these become links.

A role whose target griffe resolves (in the scope of the documented object, as Python
would, or as a full dotted path) becomes a mkdocstrings cross-reference to the entry of
the target's canonical path, which ``mkdocs build --strict`` checks. A target outside the
package (``torch.Tensor``), or one the reference does not show (private, or left out of its
module's ``__all__``), stays plain code. The ``~`` prefix shows the last component only, as
in Sphinx.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(
    r":(?:class|func|meth|mod|attr|data|exc|obj):`(?P<short>~?)(?P<target>[A-Za-z_][\w.]*)`"
)


def _canonical(loader: griffe.GriffeLoader, path: str) -> str | None:
    """The canonical path of the object at ``path`` (an alias followed to its target)."""
    try:
        found = loader.modules_collection.get_member(path)
        return found.final_target.path if found.is_alias else found.path
    except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def _resolve(obj: griffe.Object, target: str, loader: griffe.GriffeLoader) -> str | None:
    """The canonical path ``target`` names in the docstring of ``obj``, or None."""
    if "." in target and (path := _canonical(loader, target)) is not None:
        return path  # a full dotted path
    head, _, rest = target.partition(".")
    try:
        resolved = obj.resolve(head)
    except griffe.NameResolutionError:
        return None
    return _canonical(loader, f"{resolved}.{rest}" if rest else resolved)


def _documented(loader: griffe.GriffeLoader, path: str) -> bool:
    """Whether the API reference has an entry for ``path``: no private part, and each object
    on the way down public (a module's ``__all__`` says what is; mkdocs.yml's
    ``filters: public``)."""
    if any(part.startswith("_") for part in path.split(".")):
        return False
    obj = loader.modules_collection.get_member(path)
    while obj is not None and not obj.is_module:
        if not obj.is_public:
            return False
        obj = obj.parent
    return True


class SphinxRoles(griffe.Extension):
    """Rewrites Sphinx roles in every docstring of the loaded package into cross-references."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        for obj in _walk(pkg):
            if obj.docstring is None:
                continue

            def link(match: re.Match[str], obj: griffe.Object = obj) -> str:
                target = match.group("target")
                shown = target.rsplit(".", 1)[-1] if match.group("short") else target
                path = _resolve(obj, target, loader)
                if path is None or not _documented(loader, path):
                    return f"`{shown}`"
                return f"[`{shown}`][{path}]"

            obj.docstring.value = _ROLE.sub(link, obj.docstring.value)


def _walk(obj: griffe.Object) -> list[griffe.Object]:
    """``obj`` and every object defined in it (aliases are documented where they point)."""
    found = [obj]
    for member in obj.members.values():
        if not member.is_alias:
            found.extend(_walk(member))  # type: ignore[arg-type]
    return found
