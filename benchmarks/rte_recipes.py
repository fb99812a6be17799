"""``python benchmarks/rte_recipes.py``: does a cheap fine-tuning recipe teach the embedded model RTE?

The quick profile trains RTE with one epoch at lr 1e-4, which leaves the classifier no better than RTE's constant
predictor, so Kovaleva §4.6's RTE rows cannot be judged. Each trial here is the quick recipe with RTE's epochs,
learning rate and batch size changed, trained on the whole RTE training set (2,490 pairs) in the precision the book
would use on this machine (``bf16="auto"``), one thread, and scored on the whole dev set (277 pairs) by the book's
own test of having learned (:func:`attnbook.studies.heads_off.learned.learned`: paired interval above the constant
predictor and the exact interval of the accuracy clearing it).

Trials run two at a time in separate processes (the machine's two cores; the book's fine-tuning also runs two
one-thread workers). Each classifier is cached like the book's, so a recipe adopted from here costs the build
nothing on the machine that ran it. Writes ``attnbook/assets/rte_recipe_trials.json`` (chapter 4 shows it) (machine, CPU kind, commit,
each trial's recipe, dev accuracy and interval, the constant predictor, the verdict and its reason, train CPU s).

``--trials "3:5e-5:16:0,5:3e-5:16:0"``: epochs:lr:batch:seed per trial.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE.parent))

DEFAULT_TRIALS = "3:5e-5:16:0,5:3e-5:16:0"


def _trial(spec: str) -> dict:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    from attnbook.chapters.profiles.glue import FINETUNE_PROFILES
    from attnbook.engine.finetune import FinetuneParams, get_finetuned, recipe_dev_outputs
    from attnbook.studies.heads_off.learned import learned

    epochs, lr, batch, seed = spec.split(":")
    recipe = dict(FINETUNE_PROFILES["quick"])
    recipe.update(epochs={**{"default": 1}, "RTE": float(epochs)}, lr={"default": 1e-4, "RTE": float(lr)},
                  batch_size={"default": 32, "RTE": int(batch)})
    params = FinetuneParams.from_mapping(recipe)
    start_cpu, start = time.process_time(), time.time()
    clf, _ = get_finetuned("embedded", "RTE", "pretrained_ft", params, seed=int(seed), evaluate_dev=False,
                           progress=False)
    train_cpu, train_wall = time.process_time() - start_cpu, time.time() - start
    out, _ = recipe_dev_outputs(clf, "RTE", params)
    verdict = learned("RTE", out["logits"], out["labels"])
    return {"epochs": float(epochs), "lr": float(lr), "batch_size": int(batch), "seed": int(seed),
            "bf16": bool(params.bf16), "accuracy": round(verdict.score, 2), "low": round(verdict.low, 2),
            "high": round(verdict.high, 2), "constant": round(verdict.constant, 2), "n_dev": verdict.n,
            "versus_constant": [round(verdict.versus_constant_low, 2), round(verdict.versus_constant_high, 2)],
            "learned": verdict.learned, "reason": verdict.reason, "train_cpu_s": round(train_cpu, 1),
            "train_wall_s": round(train_wall, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", default=DEFAULT_TRIALS)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=HERE.parent / "attnbook" / "assets" / "rte_recipe_trials.json")
    args = ap.parse_args()
    specs = [s.strip() for s in args.trials.split(",") if s.strip()]
    import torch

    from attnbook.core.io import atomic_write_text
    from attnbook.engine.precision import native_bf16

    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        trials = list(pool.map(_trial, specs))
    old = json.loads(args.out.read_text()) if args.out.exists() else {"trials": []}
    key = lambda t: (t["epochs"], t["lr"], t["batch_size"], t["seed"], t["bf16"])  # noqa: E731
    merged = {key(t): t for t in old.get("trials", [])}
    merged.update({key(t): t for t in trials})
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE.parent, capture_output=True,
                            text=True).stdout.strip()
    payload = {"machine": platform.processor() or platform.machine(),
               "cpu": f"{torch.backends.cpu.get_cpu_capability()}, native bfloat16: {native_bf16()}",
               "date": time.strftime("%Y-%m-%d"), "commit": commit,
               "trials": sorted(merged.values(), key=key)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(payload, indent=1) + "\n")
    for t in trials:
        print(f"RTE {t['epochs']:g} epochs, lr {t['lr']:g}, batch {t['batch_size']}, seed {t['seed']}: "
              f"{t['accuracy']:.1f} [{t['low']:.1f}, {t['high']:.1f}] vs constant {t['constant']:.1f}: "
              f"{'learned' if t['learned'] else 'not learned'}; train {t['train_cpu_s']:.0f} CPU s")


if __name__ == "__main__":
    main()
