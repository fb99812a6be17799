"""The ``attnbook`` command line.

    attnbook run CHAPTER [--profile quick|smoke|paper] [-p key=value ...]
    attnbook build [--profile quick] [--chapters 01 02 ...] [--no-execute] [--pdf]
    attnbook plan [--profile quick|smoke|paper] [--model NAME]
    attnbook fetch DATASET [DATASET ...] [--dest DIR] [--base-url URL]
    attnbook list
    attnbook cache list [--all] [--results DIR] | size | verify
    attnbook cache prune [--unused [--results DIR]] [--older-than DAYS] [--kind K ...] [--all] [--dry-run]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from attnbook.core.errors import AttnbookError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="attnbook", description="Run and build the attnbook chapters.")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="execute one chapter with papermill into book/")
    run.add_argument("chapter", help="chapter id, number (01) or unique part of its name")
    run.add_argument("--profile", default="quick", help="smoke | quick | paper (default: quick)")
    run.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                     help="override a chapter parameter (repeatable)")
    run.add_argument("--log-output", action="store_true", help="stream cell output while running")
    run.add_argument("--scheduler", default=None,
                     help="where the chapters' jobs run: local[:N] (a local cluster of N one-thread workers), a Dask scheduler "
                              "address (tcp://host:8786), slurm[:N] or pbs[:N] (pip install 'attnbook[cluster]'); "
                              "default: $ATTNBOOK_SCHEDULER, else this machine as today")

    build = sub.add_parser("build", help="execute every chapter and render the book to _build/html")
    build.add_argument("--profile", default="quick")
    build.add_argument("--chapters", nargs="*", default=None)
    build.add_argument("--no-execute", action="store_true", help="render the already executed book/ only")
    build.add_argument("--times-json", default=None, help="write per-chapter seconds to this JSON file")
    build.add_argument("--pdf", action="store_true", help="also print the whole book to _build/pdf/attnbook.pdf")
    build.add_argument("--scheduler", default=None,
                       help="where the chapters' jobs run: local[:N] (a local cluster of N one-thread workers), a Dask scheduler "
                              "address (tcp://host:8786), slurm[:N] or pbs[:N] (pip install 'attnbook[cluster]'); "
                              "default: $ATTNBOOK_SCHEDULER, else this machine as today")

    from attnbook.data import fetch as fetch_mod  # lazy: a command loads only its own machinery

    fetch = sub.add_parser("fetch", help="download datasets from their original public sources, checksum-verified")
    fetch_mod.add_arguments(fetch)

    plan = sub.add_parser("plan", help="estimate each chapter's cost on this machine before running a profile")
    plan.add_argument("--profile", default="quick", help="smoke | quick | paper (default: quick)")
    plan.add_argument("--model", default=None, help="another model than the profile's (a name or folder)")
    plan.add_argument("--chapters", nargs="*", default=None)
    plan.add_argument("--seconds", type=float, default=1.5, help="seconds to time each kind of work (default 1.5)")
    plan.add_argument("--json", default=None, help="also write the estimate (seconds per chapter) to this file")
    plan.add_argument("--decide", action="store_true",
                      help="price the samples that would decide the undecided claims of the built book's results")
    plan.add_argument("--target", type=float, default=0.8, help="with --decide: the decided share to reach (0.8)")
    plan.add_argument("--workers", type=int, nargs="*", default=None, metavar="N",
                      help="also the wall time with N one-thread workers (e.g. --workers 1 2 8 64): chapters side by "
                           "side where they can be, fine-tuning jobs and seeds spread over the workers")

    sub.add_parser("list", help="list chapters and their parameters")
    sub.add_parser("models", help="list the encoder families attnbook supports, and where their heads are")

    cache = sub.add_parser("cache", help="show, check and prune the disk cache ($ATTNBOOK_CACHE)")
    cache_sub = cache.add_subparsers(dest="cache_command", required=True)
    cache_list = cache_sub.add_parser("list", help="entries by kind: count, size, newest and oldest")
    cache_list.add_argument("--all", action="store_true", help="also one line per entry")
    cache_list.add_argument("--results", default=None, metavar="DIR",
                            help="the results folder of the book whose chapters the entries are listed by "
                                 "(default: the book's, $ATTNBOOK_RESULTS or book/results)")
    cache_sub.add_parser("size", help="the total size of the cache's entries")
    cache_sub.add_parser("verify", help="recompute every checksum; exit 1 naming broken entries and the fix")
    prune = cache_sub.add_parser("prune", help="remove the entries --unused, --older-than, --kind or --all select")
    prune.add_argument("--unused", action="store_true",
                       help="entries no chapter of the built book used (each chapter's provenance file in the "
                            "results folder lists what it read or wrote): what a rebuild of that book, same "
                            "profile and code, does not need")
    prune.add_argument("--results", default=None, metavar="DIR",
                       help="with --unused: the results folder of that book (default: the book's)")
    prune.add_argument("--older-than", type=float, default=None, metavar="DAYS",
                       help="entries written more than DAYS days ago (reading an entry does not renew it)")
    prune.add_argument("--kind", action="append", default=[], metavar="K",
                       help="entries of this kind (repeatable; the kinds: attnbook cache list)")
    prune.add_argument("--all", action="store_true", help="every entry (with --kind/--older-than: those only)")
    prune.add_argument("--dry-run", action="store_true", help="print what would be removed; remove nothing")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if getattr(args, "scheduler", None) is not None:  # the chapters' kernels inherit it
            from attnbook.core.executor import SCHEDULER_ENV, parse_scheduler  # lazy: only a command given one reads it

            os.environ[SCHEDULER_ENV] = parse_scheduler(args.scheduler).text
        if args.command == "run":
            from attnbook.chapters.runner import parse_overrides, run_chapter  # lazy: a command loads only its own machinery

            out = run_chapter(args.chapter, args.profile, parse_overrides(args.param), log_output=args.log_output)
            print(f"[attnbook] wrote {out}")
        elif args.command == "build":
            from attnbook.chapters.runner import build_book, run_all  # lazy: a command loads only its own machinery

            times = {}
            if not args.no_execute:
                start = time.time()
                times = run_all(args.profile, [_resolve(c) for c in args.chapters] if args.chapters else None)
                times["total"] = round(time.time() - start, 1)
            html = build_book()
            if args.pdf:
                from attnbook.chapters.pdf import build_pdf  # lazy: a command loads only its own machinery

                print(f"[attnbook] PDF: {build_pdf()}")
            if args.times_json:
                from attnbook.core.io import atomic_write_json  # lazy: a command loads only its own machinery

                atomic_write_json(args.times_json, times)
            print(f"[attnbook] book built: {html / 'index.html'}")
            if times:
                print(json.dumps(times, indent=2))
        elif args.command == "fetch":
            from attnbook.data import fetch as fetch_mod  # lazy: a command loads only its own machinery

            return fetch_mod.run(args)
        elif args.command == "plan" and args.decide:
            from attnbook.chapters.decide import report  # lazy: a command loads only its own machinery
            from attnbook.chapters.results import load_results  # lazy: a command loads only its own machinery

            print(report(load_results(), args.profile, args.target, args.seconds))
        elif args.command == "plan":
            from attnbook.chapters.plan import make_plan  # lazy: a command loads only its own machinery

            plan = make_plan(args.profile, model=args.model, seconds=args.seconds,
                             chapters=[_resolve(c) for c in args.chapters] if args.chapters else None)
            print(plan.table())
            if args.workers:
                print(plan.workers_table(args.workers))
            if args.json:
                from attnbook.core.io import atomic_write_json  # lazy: a command loads only its own machinery

                atomic_write_json(args.json, {"profile": args.profile, "model": plan.model, "rates": plan.rates,
                                              "seconds": {c: round(v, 1) for c, v in plan.chapter_seconds().items()}})
        elif args.command == "list":
            from attnbook.chapters.params import CHAPTERS, PROFILES, load_registry  # lazy: a command loads only its own machinery
            from attnbook.chapters.runner import available_chapters  # lazy: a command loads only its own machinery

            load_registry()
            for chapter in available_chapters():
                print(chapter)
                for profile in PROFILES:
                    print(f"  {profile:6s} {CHAPTERS.get(chapter, {}).get(profile, {})}")
        elif args.command == "models":
            from attnbook.engine.families import family_table  # lazy: a command loads only its own machinery

            print("Encoder families attnbook runs (any model of these, by hub name or folder; -p model=...):")
            for row in family_table():
                print(f"  {row['family']:14s} model_type {row['model_types']:12s} heads in {row['layers']}[i]."
                      f"{row['attention']}, output {row['output']}; MLM head {row['mlm']}")
                print(f"  {'':14s} {row['notes']}")
            print("Another encoder: add a Family entry to attnbook/engine/families.py (where its layers, attention "
                  "projections and MLM head are); tests/test_families.py tests it on a planted model.")
        elif args.command == "cache":
            from attnbook.core import cache_admin  # lazy: a command loads only its own machinery

            return cache_admin.run(args)
    except AttnbookError as exc:
        print(f"attnbook: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _resolve(name: str) -> str:
    from attnbook.chapters.runner import resolve_chapter  # lazy: a command loads only its own machinery

    return resolve_chapter(name)


if __name__ == "__main__":
    sys.exit(main())
