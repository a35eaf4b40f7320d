"""Acquiring what the user named: targets, wheels and the download cache.

Everything here reads untrusted input (a path, a wheel from the package index, a saved report) and
turns it into files on disk with bounds checked; nothing here measures.
"""

from builder.settings.declared import DEFAULT_PLATFORM

__all__ = ["DEFAULT_PLATFORM"]
