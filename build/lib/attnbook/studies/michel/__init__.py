"""Michel, Levy & Neubig (2019), "Are Sixteen Heads Really Better than One?" (chapter 6).

``importance`` (§3.2-§4.1: ablations and importance scores), ``pruning`` (§4.2-§4.3: pruning curves and what
they say), ``seeds`` (the head findings over several fine-tuning seeds and their agreement), ``dynamics`` (§6), ``paper`` (the paper's numbers and the comparison rows), ``charts``.
"""
