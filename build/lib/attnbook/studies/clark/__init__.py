"""Clark et al. (2019), "What does BERT look at? An analysis of BERT's attention" (chapters 1-3).

Measurements (each module measures; cached functions build their own cache keys):

* :mod:`~attnbook.studies.clark.segments` - the ``[CLS] p1 [SEP] p2 [SEP]`` WikiText segments (§3 setup);
* :mod:`~attnbook.studies.clark.surface` - attention to positions, special tokens, entropy (§3);
* :mod:`~attnbook.studies.clark.gradients` - ``|dL/d attn|`` by key category (§3.2);
* :mod:`~attnbook.studies.clark.wordmaps` - word-level maps of one sentence, split words (§4.1);
* :mod:`~attnbook.studies.clark.syntax` - single heads as dependency parsers (§4.2, Table 1);
* :mod:`~attnbook.studies.clark.coref` - antecedent selection (§4.3, Table 2; GUM from :mod:`attnbook.data.gum`);
* :mod:`~attnbook.studies.clark.probe_data`, :mod:`~attnbook.studies.clark.probes` - probing classifiers
  (§5, Table 3);
* :mod:`~attnbook.studies.clark.distances`, :mod:`~attnbook.studies.clark.embedding`,
  :mod:`~attnbook.studies.clark.clusters` - head distances, MDS, clusters and behaviours (§6).

:mod:`~attnbook.studies.clark.paper` holds the paper's numbers and every "paper vs this run" row;
:mod:`~attnbook.studies.clark.charts` every chart of the three chapters.
"""
