"""The release checks: what .github/workflows/release.yml runs before it publishes anything.

    python scripts/release_checks.py tag DIST        the pushed tag vX.Y.Z names the sdist's version
    python scripts/release_checks.py artifacts DIST  twine check on every artifact, and the set

* ``tag``: in a run started by a pushed tag (``GITHUB_REF_TYPE=tag``), the tag is ``v`` and the
  version of the one sdist in DIST (its ``PKG-INFO``, which scikit-build-core wrote from
  pyproject.toml). A run by hand has no tag: it says so and passes.
* ``artifacts``: ``twine check --strict`` on every file of DIST (the metadata PyPI will read,
  the README rendered as the project page), then the set itself: one sdist, and one wheel for
  each CPython of pyproject.toml's ``[tool.cibuildwheel] build`` on each platform of PLATFORMS,
  every file of the same version. Whatever is missing or extra is named.

Exit 0 when every check passed, 1 when one failed, 2 for unusable arguments. Only Python's
standard library and twine (``twine check``, run as a program). tests/release/ runs both here
on an sdist and a wheel built from it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the workflow runs 3.12; the tests 3.10+ with tomli installed
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "metallib_builder"
"""The distribution's name as it is spelled in artifact file names."""
PLATFORMS = {
    "linux-x86_64": re.compile(r"manylinux_\d+_\d+_x86_64"),
    "linux-aarch64": re.compile(r"manylinux_\d+_\d+_aarch64"),
    "macos-arm64": re.compile(r"macosx_\d+_\d+_arm64"),
    "macos-x86_64": re.compile(r"macosx_\d+_\d+_x86_64"),
}
"""The release's platforms, each recognised in a wheel's platform tag."""
WHEEL = re.compile(
    rf"^{PROJECT}-(?P<version>[^-]+)-(?P<python>cp\d+)-(?P<abi>cp\d+)-(?P<platform>[^-]+)\.whl$"
)
SDIST = re.compile(rf"^{PROJECT}-(?P<version>[^-]+)\.tar\.gz$")


class Unusable(Exception):
    """Input the checks cannot judge (exit 2): its one-line message."""


def pythons(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The CPython tags (``cp310``...) the wheels are built for: ``[tool.cibuildwheel] build``."""
    with pyproject.open("rb") as f:
        selectors = tomllib.load(f)["tool"]["cibuildwheel"]["build"]
    found = []
    for selector in selectors:
        match = re.fullmatch(r"(cp\d+)-\*", selector)
        if match is None:
            raise Unusable(f"pyproject.toml: build selector {selector!r} is not cpNNN-*")
        found.append(match.group(1))
    return found


def sdist_version(sdist: Path) -> str:
    """The ``Version:`` of the sdist's own ``PKG-INFO``."""
    with tarfile.open(sdist) as tar:
        try:
            member = tar.extractfile(f"{sdist.name.removesuffix('.tar.gz')}/PKG-INFO")
        except KeyError:
            member = None
        if member is None:
            raise Unusable(f"{sdist.name}: no PKG-INFO at its top")
        text = member.read().decode("utf-8")
    match = re.search(r"^Version: (\S+)$", text, re.MULTILINE)
    if match is None:
        raise Unusable(f"{sdist.name}: PKG-INFO states no Version")
    return match.group(1)


def _one_sdist(dist: Path) -> Path:
    found = sorted(dist.glob("*.tar.gz"))
    if len(found) != 1:
        raise Unusable(f"{dist}: {len(found)} sdists, want exactly one")
    return found[0]


def check_tag(dist: Path) -> list[str]:
    """Problems with the pushed tag (none in a run that no tag started)."""
    version = sdist_version(_one_sdist(dist))
    if os.environ.get("GITHUB_REF_TYPE") != "tag":
        print(f"tag: no tag pushed (a run by hand); the sdist is version {version}")
        return []
    tag = os.environ.get("GITHUB_REF_NAME", "")
    if tag != f"v{version}":
        return [f"the tag is {tag!r}, the package's version {version}: tag v{version}"]
    print(f"tag: {tag} names version {version}")
    return []


def missing_and_extra(names: list[str], wanted_pythons: list[str]) -> list[str]:
    """What the set of artifact file names lacks or holds beyond one sdist and one wheel per
    Python and platform, all of one version."""
    problems: list[str] = []
    versions: set[str] = set()
    sdists = [m for m in map(SDIST.match, names) if m]
    versions.update(m["version"] for m in sdists)
    if len(sdists) != 1:
        problems.append(f"{len(sdists)} sdists, want exactly one")
    seen: dict[tuple[str, str], list[str]] = {}
    for name in names:
        if SDIST.match(name):
            continue
        wheel = WHEEL.match(name)
        platform = wheel and next(
            (key for key, tag in PLATFORMS.items() if tag.search(wheel["platform"])), None
        )
        if wheel is None or platform is None or wheel["python"] != wheel["abi"]:
            problems.append(f"{name}: not an sdist or a wheel of this release's platforms")
            continue
        versions.add(wheel["version"])
        seen.setdefault((wheel["python"], platform), []).append(name)
    if len(versions) > 1:
        problems.append(f"artifacts of several versions: {', '.join(sorted(versions))}")
    for python in wanted_pythons:
        for platform in PLATFORMS:
            count = len(seen.get((python, platform), []))
            if count != 1:
                problems.append(f"{count} wheels for {python} on {platform}, want one")
    for python, platform in sorted(seen):
        if python not in wanted_pythons:
            problems.append(f"a wheel for {python} on {platform}, not built (pyproject.toml)")
    return problems


def twine_check(files: list[Path]) -> list[str]:
    """``twine check --strict`` on each file: its output for each that fails."""
    twine = shutil.which("twine") or shutil.which("twine", path=str(Path(sys.executable).parent))
    if twine is None:
        raise Unusable("twine is not installed (pip install twine)")
    done = subprocess.run(
        [twine, "check", "--strict", *map(str, files)], capture_output=True, text=True, check=False
    )
    print(done.stdout, end="")
    if done.returncode == 0:
        return []
    return [f"twine check --strict failed: {done.stdout.strip()} {done.stderr.strip()}"]


def check_artifacts(dist: Path) -> list[str]:
    files = sorted(p for p in dist.iterdir() if p.is_file())
    if not files:
        return [f"{dist}: no artifacts"]
    problems = twine_check(files)
    problems += missing_and_extra([p.name for p in files], pythons())
    if not problems:
        print(f"artifacts: {len(files)} files, one sdist and every wheel, each passing twine check")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="release_checks.py", description=__doc__.split("\n")[0])
    parser.add_argument("check", choices=["tag", "artifacts"])
    parser.add_argument("dist", type=Path, help="the folder holding the artifacts")
    args = parser.parse_args(argv)
    if not args.dist.is_dir():
        print(f"error: {args.dist}: not a folder", file=sys.stderr)
        return 2
    try:
        problems = check_tag(args.dist) if args.check == "tag" else check_artifacts(args.dist)
    except Unusable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"{args.check}: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
