"""The package version, one place for the package and its run records."""

__version__ = "0.1.0"
