"""What chapters 5 (Kovaleva) and 6 (Michel) share about switched-off heads: ``effects`` (classifiers, data,
cached sweeps, paired statistics) and ``charts``."""
