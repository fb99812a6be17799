"""attnbook: the helper package of an executable book on BERT's attention heads.

It reproduces Clark et al. (2019), Kovaleva et al. (2019), Michel et al. (2019)
and Niven & Kao (2019). Small modules by concern; arrays are 0-based
``attn[layer, head, query, key]``; labels shown to readers are 1-based ``layer-head``.
"""
__version__ = "0.1.0"
