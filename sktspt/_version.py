"""The package version, in one place (read by the build, the package and saved files)."""

__version__ = "0.5.0"
