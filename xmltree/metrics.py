"""Ranking metrics for extreme multi-label classification."""
