"""The size commands on a wheel that holds no metallib: each binary member holding run-time
sources is one host library, reported as ``--member`` reports it; a binary holding none is left
out; a wheel whose binaries hold none is one line, exit 2; a wheel holding a metallib is its
metallibs only.

The wheels are made here: ELF libraries compiled by Debian's clang, zipped with ``zipfile``. The
independent side is LLVM's reading of each library (``binaries.elf_string_returns``: each
exported function's returned ``.rodata`` string), the member's bytes as ``zipfile`` reads them,
and the function names written below.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from binaries import cxx_elf, elf_string_returns
from clirun import run_cli
from synthetic import synthetic_bytes

ALPHA = "#include <metal_stdlib>\\nkernel void alpha(device float* x) { x[0] = 1; }\\n"
GROWN = ALPHA + "kernel void alpha2(device float* x) { x[0] = 2; }\\n"
HOSTS = {
    "pkg/libfirst.so": 'namespace one {{ const char* alpha() {{ return "{alpha}"; }} }}\n',
    "pkg/sub/libsecond.so": (
        "namespace two {\n"
        'const char* beta() { return "using namespace metal;\\nkernel void beta() {}\\n"; }\n'
        'const char* gamma() { return "#include <metal_stdlib>\\n// gamma\\n"; }\n'
        "}\n"
    ),
}
PLAIN = (
    'namespace three { const char* name() { return "one word"; } }\n'
    "int answer(int x) { return x + 1; }\n"
)
WANTED = {
    "pkg/libfirst.so": {"_ZN3one5alphaEv": "one::alpha"},
    "pkg/sub/libsecond.so": {"_ZN3two4betaEv": "two::beta", "_ZN3two5gammaEv": "two::gamma"},
}


@dataclass(frozen=True)
class Wheels:
    first: Path
    """Two host libraries and a plain binary."""
    grown: Path
    """The same, with ``one::alpha`` returning a longer source."""
    plain: Path
    """Only the plain binary."""
    binaries: dict[str, Path]
    """Member -> the library zipped as it (first release), ``alpha`` grown: ``grown``."""


def _compile(folder: Path, name: str, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    cpp = folder / f"{name}.cpp"
    cpp.write_text(source)
    return cxx_elf(folder / f"{name}.so", cpp)


def _wheel(path: Path, members: dict[str, Path | bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("pkg/__init__.py", "")
        for name, data in members.items():
            archive.writestr(name, data if isinstance(data, bytes) else data.read_bytes())
    return path


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Wheels:
    root = tmp_path_factory.mktemp("host-wheels")
    first = _compile(root / "v1", "first", HOSTS["pkg/libfirst.so"].format(alpha=ALPHA))
    grown = _compile(root / "v2", "first", HOSTS["pkg/libfirst.so"].format(alpha=GROWN))
    second = _compile(root / "v1", "second", HOSTS["pkg/sub/libsecond.so"])
    plain = _compile(root / "v1", "plain", PLAIN)
    hosts: dict[str, Path | bytes] = {"pkg/libfirst.so": first, "pkg/sub/libsecond.so": second}
    tag = "py3-none-linux_x86_64.whl"
    (root / "a").mkdir()
    (root / "b").mkdir()
    return Wheels(
        first=_wheel(root / "a" / f"pkg-1.0-{tag}", {**hosts, "pkg/libplain.so": plain}),
        grown=_wheel(
            root / "b" / f"pkg-1.1-{tag}",
            {**hosts, "pkg/libfirst.so": grown, "pkg/libplain.so": plain},
        ),
        plain=_wheel(root / f"pkg-0.9-{tag}", {"pkg/libplain.so": plain}),
        binaries={"pkg/libfirst.so": first, "pkg/sub/libsecond.so": second, "grown": grown},
    )


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(tmp_path / "cache"))


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code, out, err = run_cli([*args, "--format", "json"], capsys)
    assert code == 0, err
    doc: dict[str, object] = json.loads(out)
    return doc


def _llvm_rows(library: Path, member: str) -> dict[str, int]:
    """Each function WANTED names for ``member`` -> the bytes LLVM finds it returning."""
    found = elf_string_returns(library)
    names = WANTED[member]
    assert set(names) <= set(found)  # the plain one-word name of libplain is not among them
    return {names[symbol]: len(found[symbol][1]) for symbol in names}


def _rows(doc: object) -> dict[str, int]:
    assert isinstance(doc, dict)
    return {u["name"]: u["host_bytes"] for u in doc["jit_units"]}


def test_both_host_libraries_are_reported_and_the_plain_one_left_out(
    wheels: Wheels, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report WHEEL``: a library per member holding run-time sources, in wheel order, each
    the document ``--member`` gives; rows and file sizes as LLVM and ``zipfile`` read them."""
    doc = _json(capsys, "report", str(wheels.first))
    libraries = doc["libraries"]
    assert isinstance(libraries, list)
    assert [lib["source"]["member"] for lib in libraries] == list(WANTED)
    with zipfile.ZipFile(wheels.first) as archive:
        sizes = {member: archive.getinfo(member).file_size for member in WANTED}
    for lib, member in zip(libraries, WANTED, strict=True):
        assert _rows(lib) == _llvm_rows(wheels.binaries[member], member)
        assert lib["host_library"]["file_size"] == sizes[member]
        assert lib["source"]["kind"] == "wheel" and lib["source"]["wheel"] == str(wheels.first)
        assert lib == _json(capsys, "report", str(wheels.first), "--member", member)
    # --download models a metallib's share of the wheel: refused, one line
    code, out, err = run_cli(["report", str(wheels.first), "--download"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--download models a metallib's share of its wheel; the wheel pkg-1.0" in err
    # the plain binary alone, named: as the binary itself would be (unchanged)
    code, out, err = run_cli(["report", str(wheels.first), "--member", "libplain.so"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{wheels.first}:pkg/libplain.so: an ELF binary that holds no metallib" in err


def test_compare_budget_and_history_of_such_wheels(
    wheels: Wheels, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``compare`` pairs the host libraries by member: ``one::alpha`` grew by the bytes LLVM
    finds it grew by, the other library did not change; a budget whose target is the wheel and
    names no member measures both (``max-size``: their bytes together, as of a wheel's
    metallibs; a limit one byte under fails); ``history`` has a
    point per library per wheel."""
    doc = _json(capsys, "compare", str(wheels.first), str(wheels.grown))
    pairs = doc["libraries"]
    assert isinstance(pairs, list)
    assert [(p["change"], p["base"]["member"], p["head"]["member"]) for p in pairs] == [
        ("paired", m, m) for m in WANTED
    ]
    old = _llvm_rows(wheels.binaries["pkg/libfirst.so"], "pkg/libfirst.so")["one::alpha"]
    new = _llvm_rows(wheels.binaries["grown"], "pkg/libfirst.so")["one::alpha"]
    assert new - old == len("kernel void alpha2(device float* x) { x[0] = 2; }\n")
    deltas = [{u["name"]: u["delta_bytes"] for u in p["jit"]["units"]} for p in pairs]
    assert deltas[0]["one::alpha"] == new - old
    assert set(deltas[1].values()) == {0}

    sizes = [wheels.binaries[m].stat().st_size for m in WANTED]
    for limit, wanted_code in ((sum(sizes), 0), (sum(sizes) - 1, 1)):
        budget = tmp_path / "metallib-size.toml"
        budget.write_text(f'[[budget]]\ntarget = "{wheels.first}"\nmax-size = {limit}\n')
        code, out, err = run_cli(["budget", str(budget), "--format", "json"], capsys)
        assert code == wanted_code, err
        assert [v["value"] for v in json.loads(out)["verdicts"]] == [sum(sizes)]

    history = _json(capsys, "history", str(wheels.first), str(wheels.grown))
    libraries = history["libraries"]
    assert isinstance(libraries, list)
    assert [h["library"] for h in libraries] == list(WANTED)
    grown_size = wheels.binaries["grown"].stat().st_size
    points = [[p["host_library_bytes"] for p in h["points"]] for h in libraries]
    assert points == [[sizes[0], grown_size], [sizes[1], sizes[1]]]


def test_a_wheel_whose_binaries_hold_no_run_time_source(
    wheels: Wheels, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One line, exit 2, naming the binaries read; the commands that read metallibs only
    (``list``) say what they said before."""
    code, out, err = run_cli(["report", str(wheels.plain)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    name = wheels.plain.name
    assert err.startswith(f"error: {wheels.plain}: the wheel {name} contains no metallib")
    assert err.rstrip().endswith(
        " nor run-time source (no function of its binary returns a source text: pkg/libplain.so)"
    )
    budget = tmp_path / "metallib-size.toml"
    budget.write_text(f'[[budget]]\ntarget = "{wheels.plain}"\nmax-size = 1\n')
    code, out, err = run_cli(["budget", str(budget)], capsys)
    (line,) = [line for line in err.splitlines() if not line.startswith("budgets: ")]
    assert code == 2 and line.startswith("error: ") and "nor run-time source (no " in line
    code, out, err = run_cli(["list", str(wheels.first)], capsys)
    assert code == 2 and err.count("\n") == 1
    assert err.rstrip().endswith("(no .metallib member, and none inside its binaries)")


def test_a_wheel_holding_a_metallib_is_its_metallibs_only(
    wheels: Wheels, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``.metallib`` member beside a host library: the report is the metallib's alone."""
    metallib = synthetic_bytes([("alpha", 400), ("beta", 300)])
    wheel = _wheel(
        tmp_path / "pkg-2.0-py3-none-linux_x86_64.whl",
        {"pkg/kernels.metallib": metallib, "pkg/libfirst.so": wheels.binaries["pkg/libfirst.so"]},
    )
    doc = _json(capsys, "report", str(wheel))
    source = doc["source"]
    assert isinstance(source, dict) and source["member"] == "pkg/kernels.metallib"
    assert doc["file_size"] == len(metallib) and doc["jit_units"] == []
    assert "host_library" not in doc
