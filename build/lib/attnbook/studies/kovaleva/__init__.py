"""Kovaleva et al. (2019), *Revealing the Dark Secrets of BERT*: chapters 4 and 5.

Measurements: ``patterns`` (the five classes, synthetic maps, map features, rules), ``cnn`` (the pattern CNN),
``labels`` (the book's labelled maps), ``taxonomy`` (class shares over a corpus, Fig. 2), ``framenet`` (§4.2),
``features`` (§4.3-4.5), ``table1`` (Table 1), ``disabling`` (§4.6) and ``word_match`` (§5), on the dev
inputs of ``inputs``; ``paper`` (the paper's numbers and the comparisons) and ``charts`` (every chart).
"""
