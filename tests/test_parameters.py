"""Typed chapter parameters (attnbook.core.parameters): checked when made, frozen, one class per chapter."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from attnbook.chapters.params import CHAPTERS, chapter_params, load_registry
from attnbook.core.errors import ParameterError
from attnbook.core.parameters import Parameters, conforms


@dataclass(frozen=True, kw_only=True)
class Toy(Parameters):
    n: int
    rate: float
    name: str
    cap: int | None
    caps: dict[str, int | None]
    tasks: list[str] = field(default_factory=lambda: ["SST-2"])


def _toy(**kw):
    return Toy(**{"n": 3, "rate": 0.5, "name": "x", "cap": None, "caps": {"default": None}, **kw})


def test_a_value_of_the_wrong_type_names_the_parameter_and_the_fix():
    with pytest.raises(ParameterError, match=r"'n' takes int, got '3' \(str\).*-p n"):
        _toy(n="3")
    with pytest.raises(ParameterError, match="'n' takes int"):
        _toy(n=True)  # a bool is not a count
    with pytest.raises(ParameterError, match="'caps'"):
        _toy(caps={"default": "all"})
    with pytest.raises(ParameterError, match="'tasks'"):
        _toy(tasks="SST-2")
    assert _toy(rate=1).rate == 1  # an int is a float
    assert _toy(cap=5).cap == 5


def test_frozen_and_replace_checks_again():
    t = _toy()
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.n = 4
    assert t.replace(n=4).n == 4 and t.n == 3
    with pytest.raises(ParameterError, match="unknown parameter.*'m'.*known: cap, caps, device"):
        t.replace(m=1)
    with pytest.raises(ParameterError, match="'n' takes int"):
        t.replace(n=0.5)


def test_names_and_as_dict_order():
    t = _toy()
    assert Toy.names() == ("device", "use_cache", "n", "rate", "name", "cap", "caps", "tasks")
    assert list(t.as_dict()) == ["device", "use_cache", "n", "rate", "name", "cap", "caps", "tasks", "profile",
                                 "chapter"]


def test_conforms_reads_the_annotations_the_chapters_use():
    assert conforms([0.1, 1], list[float]) and not conforms([0.1, "a"], list[float])
    assert conforms("all", int | str) and conforms(3, int | str) and not conforms(None, int | str)
    assert conforms((1, 2), tuple[int, ...]) and not conforms((1, "a"), tuple[int, ...])
    with pytest.raises(TypeError, match="does not read"):
        conforms(1, set[int])


def test_every_chapter_is_one_typed_class_and_overrides_are_checked():
    load_registry()
    for chapter, profiles in CHAPTERS.items():
        kind = type(profiles["quick"])
        assert issubclass(kind, Parameters) and kind is not Parameters, chapter
        assert all(type(v) is kind for v in profiles.values()), chapter
        for name in kind.names():  # every field annotated with a type the checker reads
            assert all(conforms(getattr(v, name), kind.__dict__["_attnbook_hints"][name]) for v in profiles.values())
    with pytest.raises(ParameterError, match="'n_segments' takes int, got 'many'"):
        chapter_params("01_clark_surface_patterns", "smoke", {"n_segments": "many"})
    p = chapter_params("02_clark_probing", "smoke", {"probe_epochs": 1})
    assert p.probe_epochs == 1 and p.chapter == "02_clark_probing" and p.profile == "smoke"
    with pytest.raises(AttributeError):
        p.n_segments  # a chapter 1 name read on chapter 2's parameters fails where it is read


def test_a_results_record_reads_back_as_the_chapters_parameters_and_another_versions_is_refused():
    from attnbook.chapters.params import from_record

    full = chapter_params("01_clark_surface_patterns", "smoke", {"n_segments": 7}).as_dict()
    back = from_record("01_clark_surface_patterns", full)
    assert back == chapter_params("01_clark_surface_patterns", "smoke", {"n_segments": 7}) and back.profile == "smoke"
    with pytest.raises(ParameterError, match=r"lacks the parameters \['grad_segments'\].*run the chapter again"):
        from_record("01_clark_surface_patterns", {k: v for k, v in full.items() if k != "grad_segments"})
    with pytest.raises(ParameterError, match="unknown parameter 'n_segs'"):
        from_record("01_clark_surface_patterns", {**full, "n_segs": 3})
