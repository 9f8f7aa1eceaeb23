"""Reproductions of the papers' tables and figures (they use the library in ``qe``, never copy it)."""
