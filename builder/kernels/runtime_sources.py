"""``[build]`` settings of a tree's run-time sources: the C++ interface the host calls, and which
preambles exist.

A host links against the run-time sources that ``variants --from`` and ``build`` write, so their
interface is the host's, not this tool's: MLX's ``jit/includes.h`` declares
``namespace mlx::core::metal { const char* utils(); ... }`` and calls each function by name. So
``metallib.toml`` says, in ``[build]``:

- ``jit-namespace``: the C++ namespace of the functions (default ``metal_jit``);
- ``jit-api``: what each returns, ``string`` (``const std::string&``, pieces shared between
  functions stored once) or ``cstring`` (``const char*``, each function's whole text one string
  literal, as MLX ships them);
- ``jit-lookup``: whether ``preamble(name)`` (and a build's ``unit_source(unit)``) is defined too
  (default true; MLX calls the functions by name and has none);
- ``always-embed``: ``[build.preambles]`` functions every variant and build embeds, all-AOT
  included, because host code uses them whatever is JIT (MLX: ``utils``, ``unary_ops``,
  ``binary_ops``, ``ternary_ops``, ``reduce_utils``, ``gather``);
- ``preamble-set``: ``includes`` (default) makes each JIT entry file's direct includes preambles,
  named by ``[build.preambles]`` or after the header; ``table`` makes the functions exactly those
  of ``[build.preambles]``: an include that is no table header is found inside a table function
  that inlines it (``builder.jit.tree_preambles``), as MLX's own list of preambles is.

Parsed here, for ``builder.kernels.tree_config`` (the one reader of the file), which puts the
result in ``TreeConfig.runtime``. Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from builder.errors import UsageError, closest_hint
from builder.kernels.cxx_names import namespace_problem

__all__ = [
    "APIS",
    "DEFAULT_NAMESPACE",
    "KEYS",
    "PREAMBLE_SETS",
    "RuntimeSources",
    "over_file",
    "runtime_sources",
]

APIS = ("string", "cstring")
"""What a run-time source's function returns: ``const std::string&`` or ``const char*``."""
PREAMBLE_SETS = ("includes", "table")
DEFAULT_NAMESPACE = "metal_jit"


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


def _namespace(value: Any) -> str:
    problem = namespace_problem(value) if isinstance(value, str) else None
    if not isinstance(value, str) or problem is not None:
        why = f" ({problem})" if problem else ""
        raise TypeError(f'a C++ namespace such as "metal_jit" or "mlx::core::metal"{why}')
    return value


def _choice(options: tuple[str, ...]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in options:
            raise TypeError(f"one of {', '.join(repr(o) for o in options)}")
        return str(value)

    return check


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("true or false")
    return value


def _names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("a list of [build.preambles] function names")
    return tuple(dict.fromkeys(value))


KEYS: dict[str, Callable[[Any], Any]] = {
    "jit-namespace": _namespace,
    "jit-api": _choice(APIS),
    "jit-lookup": _flag,
    "always-embed": _names,
    "preamble-set": _choice(PREAMBLE_SETS),
}
"""The ``[build]`` keys read here, each with its check (TypeError says what it must be)."""


def runtime_sources(build: Mapping[str, Any], preambles: Mapping[str, object]) -> RuntimeSources:
    """The settings from ``build`` (the checked ``[build]`` table). ValueError (the caller adds
    the file) when ``always-embed`` names a function ``[build.preambles]`` does not define, or
    ``preamble-set = "table"`` has no table to take."""
    always = build.get("always-embed", ())
    for name in always:
        if name not in preambles:
            raise ValueError(
                f"[build] always-embed names {name!r}, which [build.preambles] does not "
                f"define{closest_hint(name, list(preambles), list_known=False)}"
            )
    preamble_set = build.get("preamble-set", "includes")
    if preamble_set == "table" and not preambles:
        raise ValueError('[build] preamble-set = "table" needs a [build.preambles] table')
    return RuntimeSources(
        namespace=build.get("jit-namespace", DEFAULT_NAMESPACE),
        api=build.get("jit-api", "string"),
        lookup=build.get("jit-lookup", True),
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
    ``--jit-api`` and ``--jit-lookup`` over it (None: not given), for ``variants --from`` and
    ``build`` alike. UsageError (exit 2) for a namespace that is no C++ name, and for any of
    them on a ``catalog`` tree, whose host library is a registry of families that ``embed``'s
    interface fixes."""
    if namespace is None and api is None and lookup is None:
        return runtime
    problem = namespace_problem(namespace) if namespace is not None else None
    if problem is not None:
        raise UsageError(f"--jit-namespace {namespace!r} is not a C++ namespace name ({problem})")
    if api is not None and api not in APIS:
        raise UsageError(f"--jit-api {api!r} is not one of {', '.join(APIS)}")
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
