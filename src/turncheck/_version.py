"""The package's version: a leaf every layer may read (the package face imports them all)."""

__version__ = "0.1.0"
