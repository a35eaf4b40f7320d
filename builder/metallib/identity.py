"""An embedded library's identity: a name for it that stays the same across releases.

Position is no identity: releases add, remove and reorder the libraries of a binary
(metal-linalg 2.10.0's first library is ``QR_Unblocked``, 2.19.0's ``QR_Streaming_AMX_Reduced``).
So a library inside a binary is named by the first of these that names it alone in the binary:

1. the symbol that starts at it (``_metal_linalg_QR_Unblocked_metallib``);
2. its section (``__TEXT,metal_basic``; ELF: ``.rodata``), when no other library is in it;
3. its ordinal, its number in file order from 1 (``3``): all that is left to name it by.

A symbol or section that names libraries in several slices of a fat binary, one in each, is
qualified by the slice's architecture (``__TEXT,metal@arm64``). Symbols the assembler makes
(mapping symbols ``$d``, ``ltmp3``, ``.L…``) name a place, not a library, and are passed over.
The ordinal only says where a library is: ``compare`` pairs by it only within files of the same
name (``builder.size.compare.pair_reports``). An identity never holds ``#``,
is never empty and is never all digits unless it is the ordinal, so ``FILE#IDENTITY`` splits at
its last ``#`` and ``#3`` always means the third library.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

__all__ = ["Place", "identities", "is_ordinal"]


class Place(NamedTuple):
    """What a binary says about where one library sits (None: the binary does not say)."""

    arch: str | None
    symbol: str | None
    section: str | None
    """``SEGMENT,section`` (Mach-O) or the section's name (ELF)."""


def identities(places: Sequence[Place]) -> list[str]:
    """The identity of each library of one binary, given in file order (see the module)."""
    chosen: list[str | None] = [None] * len(places)
    rules: tuple[Callable[[Place], str | None], ...] = (
        lambda p: p.symbol,
        lambda p: p.section,
    )
    for rule in rules:
        holders: dict[str, list[int]] = {}
        for index, place in enumerate(places):
            key = rule(place)
            if key is not None and _usable(key):
                holders.setdefault(key, []).append(index)
        for key, indices in holders.items():
            archs = [places[i].arch for i in indices]
            if len(indices) == 1:
                names = [key]
            elif None not in archs and len(set(archs)) == len(indices):
                names = [f"{key}@{arch}" for arch in archs]
            else:
                continue  # it names several libraries of one slice: not theirs alone
            for index, name in zip(indices, names, strict=True):
                if chosen[index] is None:
                    chosen[index] = name
    out = [name or str(number) for number, name in enumerate(chosen, 1)]
    repeated = {name for name in out if out.count(name) > 1}  # a symbol spelt like another's
    return [str(n) if name in repeated else name for n, name in enumerate(out, 1)]


def is_ordinal(identity: str) -> bool:
    """Whether ``identity`` is a library's number in file order (nothing else names it)."""
    return identity.isdigit()


# Symbols the assembler makes, which name a place, not a library: AArch64/ARM mapping symbols
# (``$d``, ``$x.12``), Mach-O section-start temporaries (``ltmp3``), ELF local labels (``.L…``).
_ASSEMBLER = re.compile(r"\$[adtx](\..*)?|ltmp[0-9]+|\.L.*", re.DOTALL)


def _usable(name: str) -> bool:
    return (
        bool(name)
        and "#" not in name
        and not name.isdigit()
        and name.isprintable()
        and not _ASSEMBLER.fullmatch(name)
    )
