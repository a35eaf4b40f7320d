"""Acquiring what the user named: targets, wheels and the download cache.

Everything here reads untrusted input (a path, a wheel from the package index, a saved report) and
turns it into files on disk with bounds checked; nothing here measures.
"""

DEFAULT_PLATFORM = "macosx_14_0_arm64"
"""The wheel platform a ``PACKAGE==VERSION`` target is fetched for unless ``--platform`` says
otherwise (the oldest macOS MLX supports, whose wheels are the most used). Stated here, where
importing it costs nothing, so every command's help takes it from code."""
