"""Shared code of the stand-in Metal compiler (NOT Apple's compiler): arguments, AIR, recording.

The AOT build cannot run Apple's ``metal`` on Linux, so the tests point METAL_COMPILER at
``metal-standin`` (or put the ``xcrun`` stand-in of ``xcrun-bin/`` on PATH). It behaves like the
real driver where the build can tell:

* it accepts exactly the flags the build rules may pass (``-x metal``, ``-D``, ``-I``, ``-std=``
  with Apple's spellings, ``-m<os>-version-min=``, ``-W...``, ``-f...``, ``-O...``, ``-g...``,
  ``-c``, ``-o``, ``-MMD``/``-MD``/``-MF``/``-MT``/``-MQ``/``-MP``) and exits 2 naming anything
  else, so a changed rule shows up;
* compiling, it writes a depfile like the real one (the project headers reached, from ``g++ -MM``
  with the Metal header stand-ins) and an ``.air`` placeholder holding the kernels the project's
  discovery finds in the source (``builder.kernels.discovery.discover_file``, with the same -I and
  -D and ``__METAL_VERSION__`` from ``-std=``), under their real host names;
* linking (``.air`` inputs, ``-o x.metallib``), it writes a real-format metallib through the
  project's writer, one placeholder function per kernel, with the deployment target of the
  ``-m<os>-version-min=`` flag in its header;

and appends one JSON line per call to $METAL_STANDIN_LOG so tests can see what ran.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
AIR_MAGIC = "; metallib-builder stand-in AIR (placeholder module, not Apple's AIR)\n"
VERSION = "metallib-builder stand-in metal 2.0 (records calls, writes placeholders)"
VERSION_MIN = re.compile(r"^-m(macosx|ios|ios-simulator)-version-min=([0-9]+(?:\.[0-9]+){0,2})$")
STD = re.compile(r"^-std=(?:(?:macos|osx|ios)-)?metal([1-9])\.([0-9])$")
DEFAULT_DEPLOYMENT = (14, 0)
"""What the stand-in records when no version flag is given (a real one takes the SDK's)."""


def fail(message: str) -> NoReturn:
    """Exit 2 with a compiler-like diagnostic."""
    print(f"metal-standin: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def record(argv: list[str], **extra: object) -> None:
    """Append one call to $METAL_STANDIN_LOG (one JSON object per line; O_APPEND is atomic enough
    for Ninja's parallel jobs at these line lengths)."""
    log = os.environ.get("METAL_STANDIN_LOG")
    if not log:
        return
    line = (
        json.dumps(
            {
                "tool": "metal",
                "argv": argv,
                "tag": os.environ.get("METAL_STANDIN_TAG"),
                "sdk": os.environ.get("METAL_STANDIN_SDK"),
                **extra,
            }
        )
        + "\n"
    )
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


class Args:
    """A parsed command line (either mode)."""

    def __init__(self, argv: list[str]) -> None:
        self.includes: list[Path] = []
        self.defines: list[str] = []
        self.inputs: list[str] = []
        self.output: str | None = None
        self.depfile: str | None = None
        self.deps = self.compile = False
        self.std: str | None = None
        self.version_min: tuple[str, str] | None = None
        it = iter(argv)
        for arg in it:
            if arg == "-c":
                self.compile = True
            elif arg in ("-I", "-D", "-o", "-MF", "-MT", "-MQ", "-x"):
                value = next(it, None)
                if value is None:
                    fail(f"argument to '{arg}' is missing")
                self._value(arg, value)
            elif arg.startswith(("-I", "-D")) or arg.startswith("-x") and len(arg) > 2:
                self._value(arg[:2], arg[2:])
            elif arg in ("-MMD", "-MD"):
                self.deps = True
            elif arg == "-MP":
                pass
            elif STD.match(arg):
                self.std = arg[len("-std=") :]
            elif arg.startswith("-std="):
                fail(f"invalid value '{arg[5:]}' in '{arg}'")
            elif VERSION_MIN.match(arg):
                match = VERSION_MIN.match(arg)
                assert match is not None
                self.version_min = (match.group(1), match.group(2))
            elif re.match(r"^-(W|f[a-z]|O[0-3sz]?$|g)", arg):
                pass
            elif arg.startswith("-"):
                fail(f"unknown argument: '{arg}'")
            else:
                self.inputs.append(arg)

    def _value(self, flag: str, value: str) -> None:
        if flag == "-I":
            self.includes.append(Path(value))
        elif flag == "-D":
            self.defines.append(value)
        elif flag == "-o":
            self.output = value
        elif flag == "-MF":
            self.depfile = value
        elif flag == "-x" and value != "metal":
            fail(f"language '{value}' is not metal")

    @property
    def metal_version(self) -> int | None:
        match = STD.match(f"-std={self.std}") if self.std else None
        return int(match.group(1)) * 100 + int(match.group(2)) * 10 if match else None


def _escape(path: str) -> str:
    return path.replace("\\", "\\\\").replace(" ", "\\ ").replace("#", "\\#").replace("$", "$$")


def headers_reached(source: Path, args: Args) -> list[Path]:
    """The project headers ``source`` reaches, as the real compiler's -MMD lists them: ``g++ -MM``
    over the same command discovery uses (Apple's headers are the empty stand-ins, searched as
    system headers, so they are not listed; nor is the discovery prelude)."""
    sys.path.insert(0, str(ROOT))
    from builder.kernels.preprocess import (
        PRELUDE,
        find_preprocessor,
        metal_defines,
        preprocess_command,
    )

    pp = find_preprocessor()
    dirs = [Path(os.path.abspath(d)) for d in args.includes]
    cmd = preprocess_command(
        pp, [source.name], dirs, metal_defines(args.defines, args.metal_version)
    )
    with tempfile.TemporaryDirectory() as tmp:
        dep = Path(tmp) / "x.d"
        done = subprocess.run(
            [*cmd, "-MM", "-MF", str(dep), "-MT", "x"],
            cwd=source.parent,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            fail(f"{source}: {done.stderr.strip().splitlines()[-1] if done.stderr else 'failed'}")
        text = dep.read_text().replace("\\\n", " ")
    words = re.split(r"(?<!\\) +", text.partition(":")[2].strip())
    files = [Path(os.path.abspath(source.parent / w.replace("\\ ", " "))) for w in words if w]
    skip = {source.resolve(), PRELUDE.resolve()}
    return list(dict.fromkeys(f.resolve() for f in files if f.resolve() not in skip))


def compile_source(argv: list[str], args: Args) -> None:
    if len(args.inputs) != 1 or args.output is None:
        fail("expected -c SOURCE -o OUTPUT")
    if not args.output.endswith(".air"):
        fail(f"output {args.output} is not a .air file")
    if not (args.deps and args.depfile):
        fail("expected -MMD -MF DEPFILE (the build relies on compiler depfiles)")
    src = Path(args.inputs[0])
    if not src.is_file():
        fail(f"no such file: {src}")
    sys.path.insert(0, str(ROOT))
    from builder.errors import UsageError
    from builder.kernels.discovery import discover_file

    try:
        kernels = discover_file(src, args.includes, args.defines, args.metal_version)
    except UsageError as exc:
        fail(str(exc))
    headers = headers_reached(src, args)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        AIR_MAGIC,
        f"; from {src.name}\n",
        f"; std {args.std}\n",
        *(f"kernel {k.name}\n" for k in kernels),
    ]
    out.write_text("".join(lines))
    deps = [str(src.resolve()), *map(str, headers)]
    Path(args.depfile).write_text(
        f"{_escape(args.output)}: " + " \\\n  ".join(map(_escape, deps)) + "\n"
    )
    record(
        argv,
        mode="compile",
        source=str(src.resolve()),
        output=str(out.resolve()),
        headers=[str(h) for h in headers],
        kernels=[k.name for k in kernels],
    )


def read_air(path: Path) -> list[str]:
    """Kernel names held by a stand-in AIR file; exit 2 for anything else."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {path}: {exc}")
    if not text.startswith(AIR_MAGIC):
        fail(f"{path} is not a stand-in AIR module")
    return [line[len("kernel ") :] for line in text.splitlines() if line.startswith("kernel ")]


def link(argv: list[str], args: Args) -> None:
    if args.output is None or not args.inputs or args.std or args.includes or args.defines:
        fail("expected [-m<os>-version-min=V] -o OUT.metallib IN.air...")
    if not args.output.endswith(".metallib"):
        fail(f"output {args.output} is not a .metallib file")
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # tests/synthetic.py builds the functions
    import hashlib

    from synthetic import new_function, new_library

    from builder.metallib import write_library

    functions = []
    seen: dict[str, str] = {}
    for path in args.inputs:
        if not path.endswith(".air"):
            fail(f"{path}: not an .air file")
        for name in read_air(Path(path)):
            if name in seen:
                fail(f"duplicate symbol {name} ({seen[name]} and {path})")
            seen[name] = path
            # Placeholder bitcode: the bitcode magic plus a digest, deterministic per name.
            functions.append(
                new_function(name, b"BC\xc0\xde" + hashlib.sha256(name.encode()).digest())
            )
    target = DEFAULT_DEPLOYMENT
    if args.version_min is not None:
        parts = [int(p) for p in args.version_min[1].split(".")] + [0]
        target = (parts[0], parts[1])
    write_library(new_library(functions, deployment_target=target), args.output)
    record(
        argv,
        mode="link",
        inputs=[str(Path(p).resolve()) for p in args.inputs],
        output=str(Path(args.output).resolve()),
        functions=len(functions),
        deployment_target=f"{target[0]}.{target[1]}",
    )


def main(argv: list[str]) -> int:
    if argv == ["--version"]:
        print(VERSION)
        return 0
    args = Args(argv)
    if args.compile:
        compile_source(argv, args)
    else:
        link(argv, args)
    return 0
