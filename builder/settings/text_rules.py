"""What a text value must be wherever it is read, and what the generated C++ may be named:
plain text (no control characters), one of a setting's choices, C++ identifiers and namespaces
(no part a keyword); the run-time sources' interface (:data:`APIS`, :data:`DEFAULT_NAMESPACE`);
and the one wording of a refused value, ``<where> must be <what>, got <value>``.

Validators as those of ``builder.settings.validators`` are (each returns the value or raises
ValueError saying, as a noun phrase, what it must be), kept apart because ``embed`` needs them
and nothing else of the settings: ``python -m builder.jit embed``, and the copy of it that
``metallib-builder vendor`` writes into a project, reads its namespace and API by
:func:`read_text`, the reading ``builder.settings.model.Setting.read`` makes of a text setting
(:func:`checked`, then :func:`refusal`), without importing the settings registry.
cmake/MetallibPython.cmake states the namespace rule too
(tests/jit/test_codegen.py checks they agree). Standard library only: CMake runs this.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePath
from typing import Any

from builder.errors import UsageError
from builder.files.bounds import brief

__all__ = [
    "APIS",
    "CXX_IDENTIFIER",
    "CXX_KEYWORDS",
    "CXX_NAMESPACE",
    "DEFAULT_NAMESPACE",
    "Refused",
    "checked",
    "choice",
    "control_character",
    "namespace",
    "namespace_problem",
    "plain_text",
    "read_text",
    "refusal",
    "valid_namespace",
]

APIS = ("string", "cstring")
"""What a run-time source's function returns: ``const std::string&`` or ``const char*``."""
DEFAULT_NAMESPACE = "metal_jit"
"""The C++ namespace of the run-time sources' functions when none is given."""

CXX_KEYWORDS = frozenset(
    """
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class compl concept const consteval constexpr constinit const_cast
    continue co_await co_return co_yield decltype default delete do double dynamic_cast else
    enum explicit export extern false float for friend goto if inline int long mutable
    namespace new noexcept not not_eq nullptr operator or or_eq private protected public
    register reinterpret_cast requires return short signed sizeof static static_assert
    static_cast struct switch template this thread_local throw true try typedef typeid
    typename union unsigned using virtual void volatile wchar_t while xor xor_eq
    """.split()  # noqa: SIM905 (a block of words reads as the standard's table does)
)
"""C++20's keywords: names no generated function may take (``builder.jit.generate``
gives such a name a trailing ``_``) and no part of a namespace may be."""
CXX_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
"""A family name as it becomes part of a C++ name (``family_<name>``). cmake/MetalJit.cmake
states the same pattern for FAMILIES; tests/jit/test_codegen.py checks the two agree."""
CXX_NAMESPACE = rf"{CXX_IDENTIFIER}(::{CXX_IDENTIFIER})*"
"""The form of a (nested) C++ namespace name, ``a`` or ``a::b``; no part may be a keyword
besides (:func:`namespace_problem`)."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def control_character(text: str) -> str | None:
    """The first control character in ``text`` (C0, DEL, C1: a newline would end a line of
    build.ninja, a NUL a C string), or None."""
    found = _CONTROL.search(text)
    return found.group() if found else None


def plain_text(value: str) -> str:
    """Text without control characters (it reaches build files and command lines)."""
    char = control_character(value)
    if char is not None:
        raise ValueError(f"text without control characters; it holds {char!r}")
    return value


def choice(options: tuple[str, ...]) -> Callable[[Any], str]:
    """One of ``options``."""

    def check(value: Any) -> str:
        if value not in options:
            raise ValueError(f"one of {', '.join(repr(o) for o in options)}")
        return str(value)

    return check


def namespace_problem(name: str) -> str | None:
    """Why ``name`` cannot follow ``namespace`` in C++, for a message's parentheses, or None
    when it can: ``letters, digits and _ in names joined by ::`` or ``'int' is a C++ keyword``
    (``namespace int {`` does not compile)."""
    if re.fullmatch(CXX_NAMESPACE, name) is None:
        return "letters, digits and _ in names joined by ::, not starting with a digit"
    keyword = next((part for part in name.split("::") if part in CXX_KEYWORDS), None)
    if keyword is not None:
        return f"{keyword!r} is a C++ keyword"
    return None


def valid_namespace(name: str) -> bool:
    """``name`` can follow ``namespace`` in C++ (nested names allowed, no keyword)."""
    return namespace_problem(name) is None


def namespace(value: str) -> str:
    """A C++ namespace name (``a`` or ``a::b``, no part a keyword)."""
    problem = namespace_problem(value)
    if problem is not None:
        raise ValueError(f'a C++ namespace such as "metal_jit" or "mlx::core::metal" ({problem})')
    return value


def refusal(where: str, what: object, value: object) -> str:
    """The one wording of a refused value: ``<where> must be <what>, got <value>``, ``what`` a
    validator's noun phrase and ``value`` shown briefly (``builder.files.bounds.brief``)."""
    return f"{where} must be {what}, got {brief(value)}"


class Refused(ValueError):
    """A value a rule refused: what it must be (the text), and the value as that rule saw it
    (a setting's validator may have normalized it before plain text refused it)."""

    def __init__(self, what: str, value: Any) -> None:
        super().__init__(what)
        self.value = value


def checked(
    value: Any, validate: Callable[[Any], Any] | None = None, choices: tuple[str, ...] = ()
) -> Any:
    """``value`` through a setting's rules, in their order: its own validator first (it says
    best what the value must be), then plain text (a path is text that build files carry too),
    then its ``choices``. :class:`Refused` from the first rule that refuses it."""
    try:
        value = value if validate is None else validate(value)
        if isinstance(value, (str, PurePath)):
            plain_text(str(value))
            if choices:
                choice(choices)(value)
        return value
    except ValueError as exc:
        raise Refused(str(exc), value) from None


def read_text(
    value: object,
    where: str,
    *,
    validate: Callable[[str], str] | None = None,
    choices: tuple[str, ...] = (),
    error: type[Exception] = UsageError,
) -> str:
    """``value`` read as ``Setting.read`` reads a text setting with these rules (its type, then
    :func:`checked`), refused (``error``) in the same words: how ``embed`` reads its namespace
    and API without the settings registry (tests/jit/test_namespace_and_defines.py checks
    the two readings agree)."""
    if not isinstance(value, str):
        raise error(refusal(where, "text", value))
    try:
        return str(checked(value, validate, choices))
    except Refused as exc:
        raise error(refusal(where, exc, exc.value)) from None
