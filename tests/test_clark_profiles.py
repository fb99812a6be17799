"""Chapter 3 reuses chapters 1 and 2 through the cache: its parameters must be theirs, profile by profile."""
from __future__ import annotations

import pytest

from attnbook.chapters.params import PROFILES, chapter_params

CH1, CH2, CH3 = "01_clark_surface_patterns", "02_clark_probing", "03_clark_clustering"


@pytest.mark.parametrize("profile", PROFILES)
def test_chapter_3_evaluates_the_heads_on_chapter_2s_sentences(profile):
    """Same UD sentences, truncation and punctuation rule (and batch size): chapter 2's syntax counts are reused."""
    ch2, ch3 = chapter_params(CH2, profile), chapter_params(CH3, profile)
    assert ch3.model == ch2.model
    assert (ch3.syntax_split, ch3.syntax_sentences, ch3.syntax_max_tokens, ch3.syntax_batch_size, ch3.exclude_punct) \
        == (ch2.syntax_split, ch2.syntax_sentences, ch2.max_tokens, ch2.batch_size, ch2.exclude_punct)


@pytest.mark.parametrize("profile", PROFILES)
def test_chapter_3_uses_chapter_1s_segments(profile):
    """Same segments and batch size: chapter 1's surface statistics are reused."""
    ch1, ch3 = chapter_params(CH1, profile), chapter_params(CH3, profile)
    assert (ch3.model, ch3.n_segments, ch3.max_tokens, ch3.seed, ch3.batch_size) \
        == (ch1.model, ch1.n_segments, ch1.max_tokens, ch1.seed, ch1.batch_size)
