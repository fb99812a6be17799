"""What Niven & Kao (2019) report: every number of the paper chapter 7 compares with, with its table or section.

Data only. The comparison rows that read these numbers are in :mod:`attnbook.studies.niven_kao.paper.rows`, the
sentences in :mod:`attnbook.studies.niven_kao.paper.text`. Accuracies are test accuracy over 20 seeds (``n_seeds``)
unless the key says otherwise; ``mean``/``std``/``median``/``max`` are over those seeds.
"""
from __future__ import annotations

from typing import Any

#: Every number of Niven & Kao (2019) the chapter compares with (test accuracy unless the key says otherwise).
#: Sources: Table 1 (baselines, BERT), §4 text (degenerate runs), Table 2 (the "not" cue),
#: Table 3 (probes), Table 4 (adversarial test). 20 seeds per row (``n_seeds``).
PAPER: dict[str, Any] = {
    "n_seeds": 20,
    # Table 1: test (and dev) accuracy of the humans, the baselines and BERT
    "table1": {
        "Human (trained)": {"mean": 0.909, "std": 0.11},
        "Human (untrained)": {"mean": 0.798, "std": 0.16},
        "BERT (Large)": {"mean": 0.671, "std": 0.09, "median": 0.712, "max": 0.770, "dev_mean": 0.701,
                         "dev_std": 0.05},
        "GIST": {"mean": 0.711, "std": 0.01, "dev_mean": 0.716, "dev_std": 0.01},
        "BERT (Base)": {"mean": 0.623, "std": 0.07, "median": 0.651, "max": 0.685, "dev_mean": 0.680,
                        "dev_std": 0.02},
        "World Knowledge": {"mean": 0.568, "std": 0.03, "max": 0.610, "dev_mean": 0.674, "dev_std": 0.01},
        "BoV": {"mean": 0.564, "std": 0.02, "median": 0.569, "max": 0.595, "dev_mean": 0.639, "dev_std": 0.02},
        "BiLSTM": {"mean": 0.552, "std": 0.02, "median": 0.552, "max": 0.592, "dev_mean": 0.658, "dev_std": 0.01},
    },
    # §4 text: BERT Large failed to train in 5 of 20 runs (training accuracy < 80%); the other 15 runs:
    "bert_large_non_degenerate": {"mean": 0.716, "std": 0.04, "n_failed": 5, "n_runs": 20},
    # Table 2: productivity and coverage of the cue "not"; the headline row is "all" (train+dev+test).
    "not_cue": {
        "train": {"productivity": 0.65, "coverage": 0.66},
        "dev": {"productivity": 0.62, "coverage": 0.44},
        "test": {"productivity": 0.52, "coverage": 0.77},
        "all": {"productivity": 0.61, "coverage": 0.64},
    },
    # Table 3: probing with partial input (BERT = BERT Large); W warrants only, RW reason and warrants, CW claim and
    # warrants (§5).
    "table3": {
        "BERT": {
            "full": {"mean": 0.671, "std": 0.09, "median": 0.712, "max": 0.770},
            "W": {"mean": 0.656, "std": 0.05, "median": 0.675, "max": 0.712},
            "RW": {"mean": 0.600, "std": 0.10, "median": 0.574, "max": 0.750},
            "CW": {"mean": 0.532, "std": 0.09, "median": 0.503, "max": 0.732},
        },
        "BoV": {
            "full": {"mean": 0.564, "std": 0.02, "median": 0.569, "max": 0.595},
            "W": {"mean": 0.567, "std": 0.02, "median": 0.572, "max": 0.606},
            "RW": {"mean": 0.554, "std": 0.02, "median": 0.557, "max": 0.579},
            "CW": {"mean": 0.545, "std": 0.02, "median": 0.544, "max": 0.589},
        },
        "BiLSTM": {
            "full": {"mean": 0.552, "std": 0.02, "median": 0.552, "max": 0.592},
            "W": {"mean": 0.550, "std": 0.02, "median": 0.547, "max": 0.577},
            "RW": {"mean": 0.547, "std": 0.02, "median": 0.551, "max": 0.577},
            "CW": {"mean": 0.552, "std": 0.02, "median": 0.550, "max": 0.601},
        },
    },
    # Table 4 (§6): adversarial test set (train on train-swapped, validate/test on *-adv-negated; README erratum).
    "table4": {
        "BERT": {
            "full": {"mean": 0.504, "std": 0.01, "median": 0.505, "max": 0.533},
            "W": {"mean": 0.501, "std": 0.00, "median": 0.501, "max": 0.502},
            "RW": {"mean": 0.500, "std": 0.00, "median": 0.500, "max": 0.502},
            "CW": {"mean": 0.501, "std": 0.01, "median": 0.500, "max": 0.518},
        },
        # not in the ACL paper's table; recomputed from the authors' per-seed results (reference note)
        "BoV": {"full": {"mean": 0.499, "std": 0.001, "median": 0.499, "max": 0.501}},
        "BiLSTM": {"full": {"mean": 0.500, "std": 0.001, "median": 0.500, "max": 0.503}},
    },
    # the authors' BERT fine-tuning recipe: learning rate, epochs, items per step, warm-up share, weight decay
    "bert_recipe": {"lr": 2e-5, "epochs": 20, "batch_items": 8, "warmup": 0.1, "weight_decay": 0.01},
}

