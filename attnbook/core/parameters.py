"""Typed chapter parameters: one frozen dataclass per chapter, checked when it is made.

Each chapter declares its parameters as a subclass of :class:`Parameters` (a frozen, keyword-only dataclass whose
fields carry their types) and one instance per profile (``attnbook/chapters/profiles/chNN.py``). The stages read
them as attributes (``self.p.n_segments``); a name that is not a parameter fails where it is written, and a value
of the wrong type fails when the parameters are made, naming the parameter, the type it takes and the fix::

    @dataclass(frozen=True, kw_only=True)
    class SurfaceParams(Parameters):
        n_segments: int          # WikiText-2 segments analysed
        max_tokens: int

    quick = SurfaceParams(n_segments=1000, max_tokens=128)
    quick.replace(n_segments=50)        # a copy with one value changed, checked again

The base class holds what every chapter has: ``device``, ``use_cache``, and the ``chapter`` and ``profile`` the
values were resolved for (set by :func:`attnbook.chapters.params.chapter_params`).
"""
from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, Union

from attnbook.core.errors import ParameterError

P = TypeVar("P", bound="Parameters")


@dataclass(frozen=True, kw_only=True)
class Parameters:
    """The parameters of one chapter under one profile (subclass it; see the module docstring).

    ``device``: where models run: ``"auto"`` (a CUDA GPU when PyTorch sees one, else the CPU), ``"cpu"``, ``"cuda"``,
    ``"cuda:1"``; results files record the device used. ``use_cache``: read and write the disk cache
    (:mod:`attnbook.core.cache`). ``chapter`` and ``profile``: what the values were resolved for."""

    device: str = "auto"
    use_cache: bool = True
    chapter: str = ""
    profile: str = ""

    #: fields every chapter has, which no profile sets (the resolver does)
    RESOLVED = ("chapter", "profile")

    def __post_init__(self) -> None:
        hints = _hints(type(self))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not conforms(value, hints[f.name]):
                raise ParameterError(
                    f"{self.chapter or type(self).__name__}: parameter {f.name!r} takes {_type_text(hints[f.name])}, "
                    f"got {value!r} ({type(value).__name__}); pass a value of that type (papermill: -p {f.name} ...)")

    def __getattr__(self, name: str) -> Any:  # only for names that are not parameters
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(f"{self.chapter or type(self).__name__} has no parameter {name!r}; known: "
                             f"{', '.join(sorted(self.names()))}")

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every parameter a caller may set (the fields, without ``chapter`` and ``profile``)."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.name not in cls.RESOLVED)

    def replace(self: P, **changes: Any) -> P:
        """A copy with ``changes`` applied and checked; an unknown name raises :class:`ParameterError` naming the
        known ones."""
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise ParameterError(f"unknown parameter(s) {unknown} for chapter {self.chapter or type(self).__name__}; "
                                 f"known: {', '.join(sorted(self.names()))}")
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """The values by name (a shallow copy: lists and mappings as given), for results files and messages: the
        base's ``device`` and ``use_cache`` first, then the chapter's own in declaration order, then ``profile`` and
        ``chapter``."""
        own = [f.name for f in dataclasses.fields(self) if f.name not in ("device", "use_cache") + self.RESOLVED]
        return {name: getattr(self, name) for name in ("device", "use_cache", *own, "profile", "chapter")}


def _hints(cls: type) -> dict[str, Any]:
    cached = cls.__dict__.get("_attnbook_hints")
    if cached is None:
        cached = typing.get_type_hints(cls)
        setattr(cls, "_attnbook_hints", cached)  # a class attribute, not a field: the instances stay frozen
    return cached


def conforms(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of type ``hint`` (the annotations parameters use: ``int``, ``float`` (an ``int`` too),
    ``bool``, ``str``, ``None``, unions, ``list[X]``, ``tuple[X, ...]``, ``dict[K, V]``, ``Mapping``, ``Any``).
    A ``bool`` is not an ``int`` here: ``-p n_segments True`` is a mistake."""
    if hint is Any:
        return True
    if hint is None or hint is type(None):
        return value is None
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (Union, types.UnionType):
        return any(conforms(value, a) for a in args)
    if origin is typing.Literal:
        return value in args
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin in (list, Sequence):
        return isinstance(value, (list, tuple)) and all(conforms(v, args[0]) for v in value) if args else \
            isinstance(value, (list, tuple))
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(v, args[0]) for v in value)
        return not args or (len(args) == len(value) and all(conforms(v, a) for v, a in zip(value, args)))
    if origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            return False
        return not args or all(conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items())
    if isinstance(hint, type):
        return isinstance(value, hint)
    raise TypeError(f"a parameter annotation the checker does not read: {hint!r}")


def _type_text(hint: Any) -> str:
    if hint is type(None):
        return "None"
    if isinstance(hint, type) and not typing.get_args(hint):
        return hint.__name__
    return str(hint).replace("typing.", "")
