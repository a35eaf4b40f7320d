"""One naming rule for the libraries of a target, whatever holds them: what ``--member`` takes
and what every table, JSON document and comment calls a library.

A library's name is the path of the file holding it as ``unzip -l`` shows it in its wheel
(``mlx/lib/mlx.metallib``; a file given itself: its file name), and for a library inside a
binary ``#`` and its identity (``torch/lib/libtorch_cpu.dylib#__TEXT,metal_basic``,
``metal_linalg/_core.cpython-312-darwin.so#_metal_linalg_QR_Unblocked_metallib``,
``x.so#3``; ``builder.metallib.binary_sections``). ``--member`` takes the whole name, or any shorter
form that names one library only: the file's path or its base name (a binary holding one
library), the base name with ``#IDENTITY``, ``#N`` (the N-th library of its binary in file
order, as before identities), or the identity alone (a symbol also without Mach-O's leading
``_``, its C name).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from builder.files.bounds import json_int
from builder.metallib.binary_sections import Place, identities, is_ordinal

__all__ = ["Named", "Shortened", "forms", "label", "legacy_names", "shortened", "split_name"]


class Named(NamedTuple):
    """A library's name and what it is made of (``identity``/``ordinal``: inside a binary)."""

    name: str
    identity: str | None = None
    ordinal: int | None = None


def split_name(named: Named) -> str:
    """The file part of ``named.name``: the name less ``#IDENTITY``."""
    if named.identity is None:
        return named.name
    return named.name.removesuffix(f"#{named.identity}")


def forms(named: Named) -> tuple[list[str], list[str]]:
    """The whole name, then every shorter form ``--member`` takes for it (see the module)."""
    file = split_name(named)
    base = file.rpartition("/")[2]
    short = [file, base] if base != file else [file]
    identity = named.identity
    if identity is not None:
        tails = [f"#{identity}"]
        if named.ordinal is not None and not is_ordinal(identity):
            tails.append(f"#{named.ordinal}")
        short += [f"{base}{tail}" for tail in tails] + [f"{file}{tail}" for tail in tails[1:]]
        short += tails
        if not is_ordinal(identity):
            short.append(identity)
            if identity.startswith("_") and len(identity) > 1:  # a Mach-O symbol's C name
                short += [identity[1:], f"#{identity[1:]}"]
    return [named.name], [s for s in dict.fromkeys(short) if s != named.name]


def legacy_names(docs: Sequence[Any]) -> list[Named | None]:
    """The name and identity of each saved report's library (``docs``: report objects, as
    read), for a report saved before identities (schema 2 without ``source.identity``): the
    identity is made from the place it recorded (``source.embedded``: symbol, section) by the
    rule a fresh read uses, among the libraries saved from the same binary, so it pairs with
    a fresh read of that binary. None: the document does not say (its reader refuses it)."""
    out: list[Named | None] = []
    legacy: dict[str, list[tuple[int, Place, int | None]]] = {}
    for index, doc in enumerate(docs):
        src = doc.get("source") if isinstance(doc, dict) else None
        member = src.get("member") if isinstance(src, dict) else None
        if not isinstance(src, dict) or not isinstance(member, str):
            out.append(None)
            continue
        identity = src.get("identity")
        if isinstance(identity, str):
            out.append(Named(member, identity, _ordinal(src)))
            continue
        place = src.get("embedded")
        out.append(Named(member))
        if isinstance(place, dict) and "#" in member:
            file, _, number = member.rpartition("#")
            section = ",".join(
                p for p in (place.get("segment"), place.get("section")) if isinstance(p, str) and p
            )
            symbol, arch = place.get("symbol"), place.get("arch")
            where = Place(
                arch if isinstance(arch, str) else None,
                symbol if isinstance(symbol, str) else None,
                section or None,
            )
            saved = int(number) if number.isdigit() else None
            legacy.setdefault(file, []).append((index, where, saved))
    for file, found in legacy.items():
        found.sort(key=lambda item: (item[2] is None, item[2] or 0))
        named = identities([where for _, where, _ in found])
        for (index, _, ordinal), identity in zip(found, named, strict=True):
            if is_ordinal(identity) and ordinal is not None:  # the number it was saved with
                identity = str(ordinal)
            out[index] = Named(f"{file}#{identity}", identity, ordinal)
    return out


def _ordinal(src: dict[str, Any]) -> int | None:
    place = src.get("embedded")
    return json_int(place.get("ordinal")) if isinstance(place, dict) else None


def label(target: str, kind: str, member: str | None, identity: str | None) -> str:
    """A library's short name: the target, plus the member when there are several:
    ``TARGET#IDENTITY`` inside a binary given itself, ``TARGET:MEMBER`` inside a wheel or
    build: what ``list``, ``verify`` and every report (``Source.label``) call it."""
    if not member:
        return target
    if kind == "binary" and identity is not None:
        return f"{target}#{identity}"
    return f"{target}:{member}"


class Shortened(NamedTuple):
    """Libraries' names in a table too narrow for them: each one's ``short`` name, the part that
    tells it from the others (an identity, a version), and ``whole``, what they share written
    once with ``…`` where each short name goes (None: nothing to shorten)."""

    short: tuple[str, ...]
    whole: str | None


_BEFORE = re.compile(r"(?<=[:/#=\-])")  # a prefix ends after one of these
_AFTER = re.compile(r"(?=[:/#=\-])")  # a suffix starts at one of these


def shortened(labels: Sequence[str]) -> Shortened:
    """The names of ``labels`` shortened to what tells them apart: the part they all share
    before it (ending at ``:``, ``/``, ``#``, ``=`` or ``-``) and after it (starting at one) is
    taken off: ``torch==2.14.1:torch/lib/libtorch_cpu.dylib#__TEXT,metal_basic`` and
    ``…#__TEXT,metal_40`` give the two identities, ``mlx-metal==0.32.0:mlx/lib/mlx.metallib``
    and ``mlx-metal==0.32.1:…`` the two versions. Fewer than two different names, or short names
    that would be empty or alike: the names as they are."""
    distinct = list(dict.fromkeys(labels))
    if len(distinct) < 2:
        return Shortened(tuple(labels), None)
    first = distinct[0]
    start = 0
    for cut in (m.start() for m in _BEFORE.finditer(first)):
        if all(other.startswith(first[:cut]) for other in distinct):
            start = cut
    end = 0  # characters kept off the end
    for cut in (len(first) - m.start() for m in _AFTER.finditer(first)):
        tail = first[len(first) - cut :]
        if cut <= len(first) - start and all(
            o.endswith(tail) and len(o) - cut >= start for o in distinct
        ):
            end = max(end, cut)
    short = {name: name[start : len(name) - end] for name in distinct}
    if not start and not end or "" in short.values() or len(set(short.values())) < len(short):
        return Shortened(tuple(labels), None)
    whole = f"{first[:start]}…{first[len(first) - end :]}"
    return Shortened(tuple(short[name] for name in labels), whole)
