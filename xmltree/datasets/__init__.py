"""Extreme Classification Repository I/O, dataset registry and synthetic data."""
