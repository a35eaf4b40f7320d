"""Driving the CMake build: the plan, configure + Ninja with progress, the record of the build.

The modules run in two places: inside CMake (``plan``, ``tree_jit``, ``record``: standard library
and ``builder`` only, since they also run in pip's isolated build environment) and in the CLI
(``cmake``, ``driver``, which may use rich). Nothing is imported here, so CMake's helpers start
fast.
"""
