"""``[build]`` settings of a tree's run-time sources: the C++ interface the host calls, and which
preambles exist.

A host links against the run-time sources that ``variants --from`` and ``build`` write, so their
interface is the host's, not this tool's: MLX's ``jit/includes.h`` declares
``namespace mlx::core::metal { const char* utils(); ... }`` and calls each function by name. So
``metallib.toml``'s ``[build]`` says how they are written (``jit-namespace``, ``jit-api``,
``jit-lookup``) and which preambles exist beside the JIT entry files' own (``always-embed``:
host code uses them whatever is JIT; ``preamble-set``: the entry files' includes, or exactly
``[build.preambles]`` as MLX's own list is, ``builder.jit.tree_preambles``). docs/discovery.md
says what each key means; each is a setting (``builder.settings.declared``: its check, its help).
``builder.kernels.tree_config`` (the one reader of the file) checks them and hands the table here,
which puts the result in ``TreeConfig.runtime``. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from builder.errors import UsageError, closest_hint
from builder.settings.file_keys import PREAMBLE_SETS
from builder.settings.text_rules import APIS, DEFAULT_NAMESPACE

__all__ = [
    "APIS",
    "DEFAULT_NAMESPACE",
    "PREAMBLE_SETS",
    "RuntimeSources",
    "over_file",
    "runtime_sources",
]


@dataclass(frozen=True)
class RuntimeSources:
    """How a tree's run-time sources are written (``[build]`` of metallib.toml)."""

    namespace: str = DEFAULT_NAMESPACE
    api: str = "string"
    lookup: bool = True
    always: tuple[str, ...] = ()
    """``[build.preambles]`` functions embedded in every variant and build."""
    preamble_set: str = "includes"
    """``includes``: entry files' direct includes; ``table``: ``[build.preambles]`` only."""

    @property
    def table_only(self) -> bool:
        return self.preamble_set == "table"

    @property
    def storage(self) -> str:
        """How the chosen API stores the texts: ``separate`` (``cstring``: each function's whole
        text on its own) or ``deduplicated`` (``string``: pieces shared by functions once)."""
        return "separate" if self.api == "cstring" else "deduplicated"


def runtime_sources(build: Mapping[str, Any], preambles: Mapping[str, object]) -> RuntimeSources:
    """The settings from ``build`` (the checked ``[build]`` table, by setting name). ValueError
    (the caller adds the file) when ``always-embed`` names a function ``[build.preambles]``
    does not define, or ``preamble-set = "table"`` has no table to take."""
    always = tuple(dict.fromkeys(build.get("always_embed", ())))
    for name in always:
        if name not in preambles:
            raise ValueError(
                f"[build] always-embed names {name!r}, which [build.preambles] does not "
                f"define{closest_hint(name, list(preambles), list_known=False)}"
            )
    preamble_set = build.get("preamble_set", "includes")
    if preamble_set == "table" and not preambles:
        raise ValueError('[build] preamble-set = "table" needs a [build.preambles] table')
    return RuntimeSources(
        namespace=build.get("jit_namespace", DEFAULT_NAMESPACE),
        api=build.get("jit_api", "string"),
        lookup=build.get("jit_lookup", True),
        always=always,
        preamble_set=preamble_set,
    )


def over_file(
    runtime: RuntimeSources,
    namespace: str | None,
    api: str | None,
    lookup: bool | None,
    *,
    catalog: bool = False,
) -> RuntimeSources:
    """``runtime`` (metallib.toml's) with the command line's ``--jit-namespace``,
    ``--jit-api`` and ``--jit-lookup`` over it (None: not given; each was checked as its setting
    is read), for ``variants --from`` and ``build`` alike. UsageError (exit 2) for any of them
    on a ``catalog`` tree, whose host library is a registry of families that ``embed``'s
    interface fixes."""
    if namespace is None and api is None and lookup is None:
        return runtime
    if catalog:
        raise UsageError(
            "--jit-namespace, --jit-api and --jit-lookup apply to a folder of .metal entry "
            "files; a catalog tree's sources are written as embed writes them by default"
        )
    return replace(
        runtime,
        namespace=runtime.namespace if namespace is None else namespace,
        api=runtime.api if api is None else api,
        lookup=runtime.lookup if lookup is None else lookup,
    )
