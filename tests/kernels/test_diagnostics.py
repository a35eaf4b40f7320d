"""Attribution of compiler output to kernel lines, on recorded g++ output (no compiler needed)."""

from __future__ import annotations

from pathlib import Path

from builder.kernels.diagnostics import Locator, parse_compiler_output

# g++ 12 on a tree src/{fam/ops.h, shim/metal_stdlib} and a generated unit.cpp that instantiates
# k<short, Twice> (line 4: the shim's static_assert fires) and k<int, Bad> (line 5).
GCC_OUTPUT = """\
In file included from ROOT/unit.cpp:1:
ROOT/src/fam/ops.h: In instantiation of 'T Bad::operator()(T) const [with T = int]':
ROOT/unit.cpp:3:62:   required from 'void k(T*) [with T = int; Op = Bad]'
ROOT/unit.cpp:5:1:   required from here
ROOT/src/fam/ops.h:5:11: error: request for member 'nope' in 'x', which is of non-class type 'int'
ROOT/src/fam/ops.h:3:93: note: in definition of macro 'OP'
In file included from ROOT/src/fam/ops.h:2:
ROOT/src/shim/metal_stdlib: In instantiation of 'T twice(T) [with T = short int]':
ROOT/src/fam/ops.h:4:1:   required from 'T Twice::operator()(T) const [with T = short int]'
ROOT/unit.cpp:3:62:   required from 'void k(T*) [with T = short int; Op = Twice]'
ROOT/unit.cpp:4:1:   required from here
ROOT/src/shim/metal_stdlib:2:62: error: static assertion failed: 4 bytes only
ROOT/src/shim/metal_stdlib:2:62: note: the comparison reduces to '(2 == 4)'
ROOT/src/shim/metal_stdlib:2:70: warning: a second diagnostic in the same context
"""


def locator(root: Path) -> Locator:
    src = root / "src"
    (src / "shim").mkdir(parents=True)
    generated = {str((root / "unit.cpp").resolve()): {4: "k_twice_int16", 5: "k_bad_int32"}}
    return Locator(src, "metal_src", src / "shim", generated, {"k_bad_int32": 42})


def test_errors_are_blamed_on_kernel_lines_with_their_instantiation(tmp_path: Path) -> None:
    diags = parse_compiler_output(GCC_OUTPUT.replace("ROOT", str(tmp_path)), locator(tmp_path))
    assert [(d.severity, d.path, d.line, d.column, d.host_names) for d in diags] == [
        ("error", "metal_src/fam/ops.h", 5, 11, ["k_bad_int32"]),
        ("error", "metal_src/fam/ops.h", 4, 1, ["k_twice_int16"]),  # not the shim's line
        ("warning", "metal_src/fam/ops.h", 4, 1, ["k_twice_int16"]),  # same context, reused
    ]
    assert diags[1].message == "static assertion failed: 4 bytes only"
    assert diags[0].format().startswith("metal_src/fam/ops.h:5:11: error: request for member")
    assert diags[0].format().endswith("[in 1 instantiation: k_bad_int32]")


def test_error_in_generated_line_goes_to_the_catalog(tmp_path: Path) -> None:
    output = (
        f"{tmp_path}/unit.cpp:5:1: error: 'k_typo' was not declared in this scope\n"
        f"{tmp_path}/unit.cpp:5:1: error: 'k_typo' was not declared in this scope\n"
    )
    (diag,) = parse_compiler_output(output, locator(tmp_path))
    assert (diag.path, diag.line, diag.where) == ("metal_src/catalog.json", 42, "catalog")
    assert diag.host_names == ["k_bad_int32"]


def test_macro_body_errors_blame_the_use_site(tmp_path: Path) -> None:
    output = (
        f"{tmp_path}/src/common/defines.h:13:69: error: 'decltype' cannot resolve address\n"
        f"{tmp_path}/unit.cpp:5:1: note: in expansion of macro 'instantiate_kernel'\n"
    )
    (diag,) = parse_compiler_output(output, locator(tmp_path))
    assert (diag.path, diag.line) == ("metal_src/catalog.json", 42)


def test_clang_style_notes_are_followed(tmp_path: Path) -> None:
    """clang prints the instantiation chain after the error, as notes; the shim error is blamed
    on the kernel line and the host name comes from the generated unit."""
    src = tmp_path / "src"
    (src / "shim").mkdir(parents=True)
    unit = tmp_path / "unit.cpp"
    output = "\n".join(
        [
            f"{src}/shim/metal_stdlib:10:3: error: static assertion failed",
            (
                f"{src}/common/atomic.h:52:9: note: in instantiation of function template "
                "specialization 'f' requested here"
            ),
            (
                f"{unit}:4:1: note: in instantiation of function template specialization "
                "'k' requested here"
            ),
            "1 error generated.",
        ]
    )
    where = Locator(
        src, "metal_src", src / "shim", {str(unit.resolve()): {4: "scatter_g_sum_int8_int32_n1"}}
    )
    (diag,) = parse_compiler_output(output, where)
    assert (diag.path, diag.line, diag.column) == ("metal_src/common/atomic.h", 52, 9)
    assert diag.host_names == ["scatter_g_sum_int8_int32_n1"]
