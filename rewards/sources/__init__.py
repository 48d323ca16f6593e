"""Verifiers, one module per family of data sources; importing a module registers its sources."""
