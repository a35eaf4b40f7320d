"""How much of the code one command passes through: the census behind docs/architecture.md's flows.

For one command, every Python process it starts (the CLI, and for a build every generator step
CMake runs) is profiled with ``sys.setprofile``, and the census counts, over all of them:

* functions called: distinct ``builder`` functions (file and qualified name) entered at least once
  (module and class bodies, comprehensions and lambdas left out, as an import is not a call);
* modules entered: distinct ``builder`` source files those functions are in;
* data shapes: distinct ``builder``-defined classes of the values those functions return (the
  records a flow hands from one step to the next: rows, tables, reports, plans, units).

It measures the structure of a flow, not its speed: profiling slows each process many times over.

    python benchmarks/flow_census.py report [METALLIB]   # report TARGET --format json
    python benchmarks/flow_census.py build               # build --source-dir TREE --jit '*'

Without METALLIB, the report flow reads mlx-metal 0.32.4's macOS 14 library (downloaded once into
the cache). The build flow builds a small tree the script writes (a template header instantiated
under host names, and an entry file of plain kernels) with every unit JIT (no Metal compiler is
needed for that), in a temporary folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import ENV, ROOT, default_metallib

# Installed into every Python process of the command through PYTHONPATH (sitecustomize runs at
# start-up); it writes one JSON file per process into the census folder when the process ends.
_SITECUSTOMIZE = r"""
import atexit, json, os, sys
_out = os.environ.get("FLOW_CENSUS_DIR")
if _out:
    _root = os.environ["FLOW_CENSUS_ROOT"]
    _functions, _shapes = set(), set()

    def _profile(frame, event, arg):
        code = frame.f_code
        # functions only: module and class bodies (no CO_NEWLOCALS) and comprehensions,
        # generator expressions and lambdas (named <...>) are left out
        ours = code.co_filename.startswith(_root)
        if not ours or not code.co_flags & 2 or code.co_name[0] == "<":
            return
        if event == "call":
            _functions.add((code.co_filename, code.co_qualname))
        elif event == "return" and arg is not None:
            kind = type(arg)
            if kind.__module__.startswith("builder."):
                _shapes.add(f"{kind.__module__}.{kind.__qualname__}")

    def _write():
        sys.setprofile(None)
        path = os.path.join(_out, f"{os.getpid()}.json")
        with open(path, "w") as f:
            json.dump({"functions": sorted(_functions), "shapes": sorted(_shapes)}, f)

    atexit.register(_write)
    sys.setprofile(_profile)
"""


def census(cmd: list[str], cwd: Path) -> dict[str, object]:
    """Run ``cmd`` with every Python process profiled; the counts over all of them."""
    with tempfile.TemporaryDirectory(prefix="flow-census-") as tmp:
        site = Path(tmp, "site")
        out = Path(tmp, "out")
        site.mkdir()
        out.mkdir()
        (site / "sitecustomize.py").write_text(_SITECUSTOMIZE)
        env = dict(ENV)
        env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
        env["FLOW_CENSUS_DIR"] = str(out)
        env["FLOW_CENSUS_ROOT"] = str(ROOT / "builder")
        done = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, check=False)
        if done.returncode != 0:
            sys.exit(f"the command failed ({done.returncode}): {' '.join(cmd)}")
        functions: set[tuple[str, str]] = set()
        shapes: set[str] = set()
        processes = 0
        for path in out.glob("*.json"):
            record = json.loads(path.read_text())
            functions |= {tuple(f) for f in record["functions"]}
            shapes |= set(record["shapes"])
            processes += 1
    modules = sorted({Path(f).relative_to(ROOT).as_posix() for f, _ in functions})
    return {
        "command": " ".join(cmd[2:]),
        "python_processes": processes,
        "functions_called": len(functions),
        "modules_entered": len(modules),
        "data_shapes": len(shapes),
        "modules": modules,
        "shapes": sorted(shapes),
    }


def _small_tree(folder: Path) -> Path:
    """A kernel tree of two entry files and a header, the shape of an MLX family: a template
    header instantiated under host names, and an entry file of plain kernels."""
    folder.mkdir()
    (folder / "scale.h").write_text(
        "#include <metal_stdlib>\nusing namespace metal;\n"
        "template <typename T>\n"
        "[[kernel]] void scale(device T* out [[buffer(0)]], uint i [[thread_position_in_grid]])"
        " {\n  out[i] = out[i] * T(2);\n}\n"
    )
    (folder / "scale.metal").write_text(
        '#include "scale.h"\n'
        "#define instantiate_scale(name, type) \\\n"
        '  template [[host_name("scale_" #name)]] [[kernel]] void scale<type>( \\\n'
        "      device type* out [[buffer(0)]], uint i [[thread_position_in_grid]]);\n"
        "instantiate_scale(float32, float)\ninstantiate_scale(float16, half)\n"
        "instantiate_scale(int32, int)\n"
    )
    (folder / "fill.metal").write_text(
        "#include <metal_stdlib>\nusing namespace metal;\n"
        "[[kernel]] void fill_one(device float* out [[buffer(0)]],"
        " uint i [[thread_position_in_grid]]) {\n  out[i] = 1.0f;\n}\n"
    )
    return folder


def main() -> None:
    flow = sys.argv[1] if len(sys.argv) > 1 else "report"
    python = sys.executable
    if flow == "report":
        target = Path(sys.argv[2]) if len(sys.argv) > 2 else default_metallib()
        cmd = [python, "-m", "builder", "report", str(target), "--format", "json"]
        result = census(cmd, ROOT)
    elif flow == "build":
        with tempfile.TemporaryDirectory(prefix="flow-build-") as tmp:
            tree = _small_tree(Path(tmp, "tree"))
            cmd = [python, "-m", "builder", "build", "--source-dir", str(tree), "--jit", "*"]
            cmd += ["--build-dir", str(Path(tmp, "build"))]
            result = census(cmd, ROOT)
    else:
        sys.exit("usage: flow_census.py report [METALLIB] | build")
    json.dump(result, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
