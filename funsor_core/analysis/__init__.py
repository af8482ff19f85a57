"""Structural analyses of terms that the rules consult: affine recognition (``affine``) and
known signs (``sign``)."""
