"""Driving the CMake build: toolchain check, configure + Ninja with progress, manifest, sizes.

The modules run in two places: inside CMake (``aot_sources``, ``manifest``: standard library and
``builder`` only, since they also run in pip's isolated build environment) and in the CLI
(``cmake``, ``progress``, ``summary``, ``presets``, which may use rich). Nothing is imported here,
so CMake's helpers start fast.
"""
