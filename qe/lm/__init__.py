"""LSTM language models over words or SentencePiece units, and the SLOR / NCE / PPL scores (Kann et al. 2018)."""
