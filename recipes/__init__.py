"""Recipes: composing, validating and launching RLVR recipes on veRL or the local CPU engine.

Heavy imports (veRL, torch) happen inside functions, so importing this package is cheap.
"""
