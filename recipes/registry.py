"""Re-export (moved to core.registry)."""

from core.registry import Registry

__all__ = ["Registry"]
