"""Settings: every option of the tool declared once, as scikit-build-core and cibuildwheel keep
theirs, with everything said about it in one ``Setting`` (``builder.settings.model``): its
command-line flag, its ``metallib.toml`` key and its budget-file key, its CMake cache variable,
its kind (how a value is read), its validator (``builder.settings.validators``; those the
generated C++ shares are in ``builder.settings.text_rules``), its help and its default.

The declarations are in ``builder.settings.declared``; everything else is made from them or
checked against them: the click options of every command (``builder.cli.tree_options.option``),
the request a build carries (``builder.cmake_build.plan_model``, whose fields are settings, read
back from plan.json by ``builder.files.dataclass_json``), the ``metallib.toml`` schema
(``builder.kernels.tree_config``), the budget keys (``builder.size.budget_file``), the CMake
cache variables and the option table of docs/build.md (``builder.cmake_build.options``);
tests/house/test_settings.py fails when a flag, key, cache variable or docs row exists that no
setting declares, or the other way round.

One spelling per setting: the name is the JSON key (plan.json's request), the flag and the
TOML keys are the name with ``-`` for ``_`` unless the declaration says otherwise, and a value
refused anywhere is worded one way, ``<where> must be <what>, got <value>``
(``builder.settings.text_rules.refusal``). Standard library only: a CMake run reads settings
too. This file imports nothing, so that ``embed`` imports ``text_rules`` alone (its vendored
copy holds no more than it needs).
"""
