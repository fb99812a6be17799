"""Profiles: one code path, three sizes.

* ``smoke`` - tiny sizes for tests: seconds per chapter.
* ``quick`` - the default: the embedded model and the local data, the whole
  book on a 2-core laptop CPU.
* ``paper`` - ``bert-base-uncased`` and the papers' data sizes.

A profile changes parameters only. Each chapter declares its parameters and
their value in every profile in :data:`CHAPTERS`; a notebook's ``parameters``
cell lists the same names with ``None`` ("take the profile's value"), so
papermill ``-p name value`` overrides any of them.
"""
from __future__ import annotations

from typing import Any, Mapping

from attnbook.chapters.spec import Chapter
from attnbook.core.errors import ParameterError

PROFILES = ("smoke", "quick", "paper")

#: chapter id -> profile -> parameter values. Every profile lists the same keys.
CHAPTERS: dict[str, dict[str, dict[str, Any]]] = {}
#: chapter id -> the chapter as it declared itself (:class:`attnbook.chapters.spec.Chapter`)
SPECS: dict[str, Chapter] = {}


#: Parameters every chapter has, with their value in every profile (a chapter may set its own).
#: ``device``: where models run: ``"auto"`` (a CUDA GPU when PyTorch sees one, else the CPU), ``"cpu"``,
#: ``"cuda"``, ``"cuda:1"``; results files record the device used. ``use_cache``: read and write the disk cache
#: (:mod:`attnbook.core.cache`); :func:`attnbook.chapters.chapter.setup` sets it once for the whole process.
COMMON: dict[str, Any] = {"device": "auto", "use_cache": True}


def register_chapter(spec: Chapter) -> None:
    """Declare a chapter (:class:`attnbook.chapters.spec.Chapter`): its parameters (plus :data:`COMMON`) in every
    profile, which must define the same keys, and everything else the book reads of it."""
    chapter = spec.id
    if not (len(chapter) > 3 and chapter[:2].isdigit() and chapter[2] == "_"):
        raise ValueError(f"a chapter id starts with its two-digit number and an underscore, got {chapter!r}")
    profiles = {name: {**COMMON, **values} for name, values in spec.profiles.items()}
    if set(profiles) != set(PROFILES):
        raise ValueError(f"{chapter}: profiles must be exactly {PROFILES}, got {sorted(profiles)}")
    keys = {p: set(v) for p, v in profiles.items()}
    if len({frozenset(k) for k in keys.values()}) != 1:
        raise ValueError(f"{chapter}: profiles define different parameters: {keys}")
    CHAPTERS[chapter] = profiles
    SPECS[chapter] = spec


class Params(dict):
    """A chapter's resolved parameters; read them as ``P.n_segments`` or ``P["n_segments"]``."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError as exc:
            raise AttributeError(f"no parameter {name!r}; known: {', '.join(sorted(self))}") from exc


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise ParameterError(f"unknown profile {profile!r}; choose one of: {', '.join(PROFILES)}")
    return profile


def chapter_params(chapter: str, profile: str, overrides: Mapping[str, Any] | None = None) -> Params:
    """The parameters of ``chapter`` under ``profile``, with ``overrides`` (``None`` values ignored).

    Raises :class:`ParameterError` for an unknown chapter, profile or parameter name.
    """
    load_registry()
    check_profile(profile)
    if chapter not in CHAPTERS:
        raise ParameterError(f"unknown chapter {chapter!r}; known: {', '.join(sorted(CHAPTERS))}")
    base = dict(CHAPTERS[chapter][profile])
    for key, value in (overrides or {}).items():
        if key not in base:
            raise ParameterError(
                f"unknown parameter {key!r} for chapter {chapter}; known: {', '.join(sorted(base))}"
            )
        if value is not None:
            base[key] = value
    _task_names(base)
    params = Params(base)
    params["profile"] = profile
    params["chapter"] = chapter
    return params


#: Parameters that name classification tasks (one name, or a list of names).
TASK_PARAMETERS = ("task", "ood_task", "tasks", "table1_tasks", "agreement_tasks", "match_tasks")


def _task_names(values: dict[str, Any]) -> None:
    """Resolve the task names of ``values`` in place, once, before any model work
    (:func:`attnbook.data.glue.task_name`): a book name stays as given, ``glue/sst2`` becomes ``SST-2`` when its
    files are local, another Hugging Face name (``owner/name[/config]``) stays as given once ``datasets`` found it;
    any other name raises the one :class:`ParameterError` that names the fix. A list parameter also takes one name
    (``-p tasks=glue/sst2``)."""
    from attnbook.data.glue import task_name  # lazy: the parameter table loads no reader until it is used

    for key in TASK_PARAMETERS:
        value = values.get(key)
        if value is None:
            continue
        if key.endswith("tasks"):
            values[key] = [task_name(v) for v in ([value] if isinstance(value, str) else value)]
        else:
            values[key] = task_name(value)


def resolve(chapter: str, profile: str, namespace: Mapping[str, Any]) -> Params:
    """Parameters for a notebook: the profile's values overridden by the non-``None`` names in ``namespace``.

    A notebook calls ``P = resolve(CHAPTER, profile, globals())`` after its parameters cell.
    """
    load_registry()
    check_profile(profile)
    if chapter not in CHAPTERS:
        raise ParameterError(f"unknown chapter {chapter!r}")
    keys = CHAPTERS[chapter][profile].keys()
    return chapter_params(chapter, profile, {k: namespace[k] for k in keys if k in namespace})


def load_registry() -> None:
    from attnbook.chapters import profiles  # noqa: F401  (registers every chapter)
