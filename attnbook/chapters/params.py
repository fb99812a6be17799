"""Profiles: one code path, three sizes.

* ``smoke`` - tiny sizes for tests: seconds per chapter.
* ``quick`` - the default: the embedded model and the local data, the whole
  book on a 2-core laptop CPU.
* ``paper`` - ``bert-base-uncased`` and the papers' data sizes.

A profile changes parameters only. Each chapter declares its parameters once, as a frozen dataclass
(:class:`attnbook.core.parameters.Parameters`) with one instance per profile, in its module of
:mod:`attnbook.chapters.profiles`; a notebook's ``parameters`` cell lists the same names with ``None`` ("take the
profile's value"), so papermill ``-p name value`` overrides any of them.
"""
from __future__ import annotations

from typing import Any, Mapping

from attnbook.chapters.spec import Chapter
from attnbook.core.errors import ParameterError
from attnbook.core.parameters import Parameters

PROFILES = ("smoke", "quick", "paper")

#: chapter id -> profile -> the chapter's parameters under it (:class:`~attnbook.core.parameters.Parameters`)
CHAPTERS: dict[str, dict[str, Parameters]] = {}
#: chapter id -> the chapter as it declared itself (:class:`attnbook.chapters.spec.Chapter`)
SPECS: dict[str, Chapter] = {}


def register_chapter(spec: Chapter) -> None:
    """Declare a chapter (:class:`attnbook.chapters.spec.Chapter`): its parameters in every profile, all instances of
    one :class:`~attnbook.core.parameters.Parameters` subclass, and everything else the book reads of it."""
    chapter = spec.id
    if not (len(chapter) > 3 and chapter[:2].isdigit() and chapter[2] == "_"):
        raise ValueError(f"a chapter id starts with its two-digit number and an underscore, got {chapter!r}")
    if set(spec.profiles) != set(PROFILES):
        raise ValueError(f"{chapter}: profiles must be exactly {PROFILES}, got {sorted(spec.profiles)}")
    kinds = {type(v) for v in spec.profiles.values()}
    if len(kinds) != 1 or not issubclass(next(iter(kinds)), Parameters):
        raise ValueError(f"{chapter}: every profile must be an instance of one Parameters subclass, got {kinds}")
    CHAPTERS[chapter] = {name: values.replace(chapter=chapter, profile=name) for name, values in spec.profiles.items()}
    SPECS[chapter] = spec


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise ParameterError(f"unknown profile {profile!r}; choose one of: {', '.join(PROFILES)}")
    return profile


def chapter_params(chapter: str, profile: str, overrides: Mapping[str, Any] | None = None) -> Parameters:
    """The parameters of ``chapter`` under ``profile``, with ``overrides`` (``None`` values ignored), checked.

    Raises :class:`ParameterError` for an unknown chapter, profile or parameter name, or a value of the wrong type.
    """
    load_registry()
    check_profile(profile)
    if chapter not in CHAPTERS:
        raise ParameterError(f"unknown chapter {chapter!r}; known: {', '.join(sorted(CHAPTERS))}")
    base = CHAPTERS[chapter][profile]
    known = base.names()
    changes = {}
    for key, value in (overrides or {}).items():
        if key not in known:
            raise ParameterError(
                f"unknown parameter {key!r} for chapter {chapter}; known: {', '.join(sorted(known))}"
            )
        if value is not None:
            changes[key] = value
    changes = _task_names({**{k: getattr(base, k) for k in TASK_PARAMETERS if k in known}, **changes})
    return base.replace(**changes)


#: Parameters that name classification tasks (one name, or a list of names).
TASK_PARAMETERS = ("task", "ood_task", "tasks", "table1_tasks", "agreement_tasks", "match_tasks")


def _task_names(values: dict[str, Any]) -> dict[str, Any]:
    """Resolve the task names of ``values`` (in place, and returned), once, before any model work
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
    return values


def resolve(chapter: str, profile: str, namespace: Mapping[str, Any]) -> Parameters:
    """Parameters for a notebook: the profile's values overridden by the non-``None`` names in ``namespace``.

    A notebook calls ``P = resolve(CHAPTER, profile, globals())`` after its parameters cell.
    """
    load_registry()
    check_profile(profile)
    if chapter not in CHAPTERS:
        raise ParameterError(f"unknown chapter {chapter!r}")
    keys = CHAPTERS[chapter][profile].names()
    return chapter_params(chapter, profile, {k: namespace[k] for k in keys if k in namespace})


def from_record(chapter: str, values: Mapping[str, Any]) -> Parameters:
    """The typed parameters a results file recorded (its ``params``, :meth:`Parameters.as_dict`): the chapter's
    parameters under the recorded profile with every recorded value. A record of another version (a name the chapter
    no longer has or has gained, a value of another type) raises :class:`ParameterError`."""
    profile = values.get("profile") or "quick"
    load_registry()
    if chapter in CHAPTERS:
        missing = sorted(set(CHAPTERS[chapter][check_profile(profile)].names()) - set(values))
        if missing:
            raise ParameterError(f"the record of chapter {chapter} lacks the parameters {missing}: it was written by "
                                 f"another version of the chapter; run the chapter again")
    return chapter_params(chapter, profile, {k: v for k, v in values.items() if k not in Parameters.RESOLVED})


def chapter_stages(chapter: str) -> list:
    """The stages of ``chapter`` (:class:`~attnbook.engine.cost.Stage`), in its pipeline's order: what
    ``attnbook plan`` adds up. The chapter's declaration names its pipeline (:attr:`Chapter.pipeline`)."""
    load_registry()
    if chapter not in SPECS:
        raise ParameterError(f"no chapter {chapter!r}; declared: {', '.join(SPECS)}")
    return SPECS[chapter].stages()


def pipelines() -> dict[str, type]:
    """Every chapter's pipeline class, by chapter id, in book order."""
    load_registry()
    return {c: spec.pipeline_class() for c, spec in SPECS.items()}


def load_registry() -> None:
    from attnbook.chapters import profiles  # noqa: F401  (registers every chapter)
