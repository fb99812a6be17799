"""Niven & Kao (2019), statistical cues in argument comprehension (chapter 7); the files: :mod:`attnbook.data.arct`.

* ``cues``: §4 cue statistics, §6 adversarial construction, the baselines without training;
* ``bert``: §3 pairwise BERT scorer, §5 probes, §6 adversarial runs;
* ``words``: the BoV and BiLSTM baselines;
* ``paper``: the paper's numbers and tables beside this run, the comparison rows;
* ``charts``: the chapter's Altair charts.
"""
