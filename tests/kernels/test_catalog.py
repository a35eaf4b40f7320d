"""The catalog: declared counts, selection, parse-back, determinism, validation, include rules."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from builder.errors import UsageError
from builder.kernels import (
    DTYPES,
    METAL_TYPES,
    CatalogError,
    ParsedName,
    load_catalog,
    parse_host_name,
    render_translation_unit,
    split_names,
)
from builder.resources import metal_src_dir


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def test_expands_to_declared_count(catalog, raw, catalog_counter) -> None:
    expected = catalog_counter(raw)
    assert len(catalog.expand()) == expected
    assert 3000 <= expected <= 8000  # big enough that AOT size effects are real


def test_family_selection_counts(catalog, raw, catalog_counter) -> None:
    per_family = {f: catalog_counter(raw, [f]) for f in raw["families"]}
    assert sum(per_family.values()) == len(catalog.expand())
    for family, count in per_family.items():
        items = catalog.expand([family])
        assert len(items) == count > 0
        assert {i.family for i in items} == {family}
    assert len(catalog.expand(["unary", "binary"])) == per_family["unary"] + per_family["binary"]
    # the order asked in does not matter: catalog order, so builds are byte-identical
    assert catalog.expand(["softmax", "unary", "softmax"]) == catalog.expand(["unary", "softmax"])


@pytest.mark.parametrize(
    "dtypes", [["float32"], ["float16", "float32"], ["bool"], ["int32", "uint8", "bfloat16"]]
)
def test_dtype_selection_counts(catalog, dtypes, raw, catalog_counter) -> None:
    items = catalog.expand(dtypes=dtypes)
    assert len(items) == catalog_counter(raw, dtypes=dtypes)
    assert len(items) < len(catalog.expand())
    index_set = set(raw["dtype_sets"]["index"])
    for inst in items:
        value_dtypes = inst.dtypes[:1] if inst.family in ("gather", "scatter") else inst.dtypes
        assert set(value_dtypes) <= set(dtypes)
        assert set(inst.dtypes) <= set(dtypes) | index_set


def test_combined_selection(catalog, raw, catalog_counter) -> None:
    items = catalog.expand(["reduce", "copy"], ["float16", "float32"])
    assert len(items) == catalog_counter(raw, ["reduce", "copy"], ["float16", "float32"])


def test_every_host_name_parses_back_and_is_unique(catalog) -> None:
    items = catalog.expand()
    names = [i.host_name for i in items]
    assert len(set(names)) == len(names)
    for inst in items:
        assert parse_host_name(inst.host_name) == ParsedName(
            inst.family, inst.form, inst.op, inst.dtypes, inst.params
        )


def test_unknown_selection_lists_valid_names(catalog) -> None:
    with pytest.raises(UsageError, match="valid: unary, binary"):
        catalog.expand(["unary", "conv"])
    with pytest.raises(UsageError, match="float8.*valid: bool, int8"):
        catalog.expand(dtypes=["float8"])


def test_expansion_and_rendering_are_deterministic(catalog) -> None:
    again = load_catalog()
    assert catalog.expand() == again.expand()
    chunk = catalog.expand(["softmax"])
    assert render_translation_unit(chunk) == render_translation_unit(again.expand(["softmax"]))


def test_instantiation_line_and_translation_unit(catalog) -> None:
    inst = next(i for i in catalog.expand(["binary"]) if i.host_name == "binary_vv_lt_bfloat16")
    assert inst.header == "binary/binary.h"
    assert inst.instantiation_line() == (
        'instantiate_kernel("binary_vv_lt_bfloat16", binary_vv, bfloat16_t, bool, Less)'
    )
    text = render_translation_unit([inst])
    assert text.splitlines()[1] == '#include "binary/binary.h"'
    assert text.endswith(inst.instantiation_line() + "\n")
    assert all(a in METAL_TYPES.values() or a[0].isupper() for a in inst.template_args)


def write_catalog(root: Path, families: dict[str, Any], sets: dict[str, Any] | None = None) -> Path:
    (root / "fam").mkdir(parents=True, exist_ok=True)
    (root / "fam" / "fam.h").write_text("#pragma once\n")
    doc = {
        "schema": 1,
        "dtype_sets": sets or {"f": ["float16", "float32"], "i": ["int32", "uint8", "bool"]},
        "families": families,
    }
    (root / "catalog.json").write_text(json.dumps(doc))
    return root


def test_small_hand_written_catalog(tmp_path: Path) -> None:
    families = {
        "unary": {
            "header": "fam/fam.h",
            "forms": {
                "v": {"template": "k_v", "args": ["{T0}", "{out}", "{op}"]},
                "g": {
                    "template": "k_g",
                    "args": ["{T0}", "{out}", "{op}", "{n}", "{m}"],
                    "params": {"n": [1, 2], "m": [7]},
                },
            },
            "ops": {
                "a": {"functor": "A", "dtypes": ["f"]},
                "b": {"functor": "B", "dtypes": ["i"], "out": "bool"},
            },
        },
        "copy": {
            "header": "fam/fam.h",
            "dtypes": ["f", "i"],
            "forms": {"v": {"template": "c", "args": ["{T0}", "{T1}"]}},
        },
    }
    catalog = load_catalog(write_catalog(tmp_path, families))
    # unary: (2 + 3) per form; v once, g twice (n) -> 5 + 10; copy: 2 x 3
    assert len(catalog.expand()) == 15 + 6
    assert [i.host_name for i in catalog.expand(["unary"], ["float32"])] == [
        "unary_v_a_float32",
        "unary_g_a_float32_n1_m7",
        "unary_g_a_float32_n2_m7",
    ]
    b = next(i for i in catalog.expand() if i.host_name == "unary_g_b_uint8_n2_m7")
    assert b.template_args == ("uint8_t", "bool", "B", "2", "7")
    assert catalog.expand(["copy"])[0].template_args == ("half", "int32_t")
    # ops a (float16) + b (bool) in 1 + 2 form/param combinations, plus copy float16 -> bool
    assert len(catalog.expand(dtypes=["bool", "float16"])) == (1 + 1) * (1 + 2) + 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f["unary"].update(header="missing.h"), "is not a file"),
        (lambda f: f["unary"]["ops"]["a"].update(dtypes=["nope"]), "dtype_sets names"),
        (lambda f: f["unary"]["forms"]["v"].update(args=["{T1}"]), "undefined T1"),
        (lambda f: f["unary"]["ops"]["a"].update(out="float64"), "not a dtype"),
        (lambda f: f.update(conv=f.pop("unary")), "family vocabulary"),
        (
            lambda f: f["unary"]["forms"].update(bad_name={"template": "x", "args": []}),
            "lowercase",
        ),
    ],
)
def test_malformed_catalogs_are_rejected(tmp_path: Path, change, message: str) -> None:
    families = {
        "unary": {
            "header": "fam/fam.h",
            "forms": {"v": {"template": "k", "args": ["{T0}", "{op}"]}},
            "ops": {"a": {"functor": "A", "dtypes": ["f"]}},
        }
    }
    change(families)
    with pytest.raises(CatalogError, match=message):
        load_catalog(write_catalog(tmp_path, families))


def test_not_a_kernel_tree(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="not a kernel source tree"):
        load_catalog(tmp_path)


def test_headers_follow_the_include_rules() -> None:
    """Quoted includes resolve against metal_src; angle includes are Metal's own headers only;
    no include is guarded by a JIT switch (the JIT generator inlines quoted includes itself)."""
    from builder.jit.preamble import inline_preamble

    root = metal_src_dir()
    families = load_catalog().families.values()
    kernel_dirs = {"common"} | {f.header.split("/")[0] for f in families}
    headers = [p for d in sorted(kernel_dirs) for p in (root / d).rglob("*.h")]
    assert len(headers) >= 15
    for header in headers:
        text = header.read_text()
        assert "JIT" not in re.sub(r"//.*", "", text), header
        assert "#pragma once" in text, header
        # What the shim would accept but Metal would not: the C++ standard library, doubles.
        code = re.sub(r"//.*", "", text)
        assert not re.search(r"\bstd::|\bdouble\b|\blong double\b", code), header
        for kind, target in re.findall(r'#include\s*([<"])([^>"]+)[>"]', text):
            if kind == '"':
                assert (root / target).is_file(), f"{header}: {target}"
            else:
                assert target.startswith("metal_"), f"{header}: <{target}>"
    for family in families:
        closure = inline_preamble([root / family.header], [root]).headers
        assert closure[0] == family.header
        assert "common/defines.h" in closure
        assert all((root / h).is_file() for h in closure)
        assert not any(h.startswith("shim") for h in closure)


@pytest.mark.parametrize(
    ("given", "names"),
    [
        ("unary,binary", ["unary", "binary"]),
        (" unary , binary ,", ["unary", "binary"]),
        ("float16", ["float16"]),
        ("", None),
        (None, None),
        (" , ", None),
    ],
)
def test_one_rule_splits_every_comma_list(given: str | None, names: list[str] | None) -> None:
    """--kernels/--dtypes of kernels, check and build, and the lists CMake passes to
    the chunker and the JIT generator, all go through split_names: blanks never select."""
    assert split_names(given) == names


def test_dtype_vocabulary_is_fixed(raw) -> None:
    assert DTYPES == (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "bfloat16",
        "float32",
        "complex64",
    )
    for members in raw["dtype_sets"].values():
        assert set(members) <= set(DTYPES)


def test_copy_tree_still_loads(tmp_path: Path) -> None:
    shutil.copytree(metal_src_dir(), tmp_path / "src")
    assert len(load_catalog(tmp_path / "src").expand()) == len(load_catalog().expand())


def test_library_imports_no_cli_or_test_dependencies() -> None:
    """builder.kernels, and what CMake runs (the catalog's tree generator, the JIT generator),
    run inside CMake and pip's isolated build environment: no click, rich or numpy."""
    code = (
        "import sys, builder.kernels, builder.jit.check, builder.kernels.catalog, "
        "builder.kernels.catalog_tree, builder.jit.__main__, builder.jit.generate; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'rich', 'numpy')))"
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True
    )
    assert proc.stdout.strip() == "[]"
