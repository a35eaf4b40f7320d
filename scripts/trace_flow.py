"""Count the code one CLI run passes through, for docs/architecture.md's flows.

    python scripts/trace_flow.py ROOT ARGS...      (LIST=1 also prints functions per module)

Runs ``metallib-builder ARGS`` in this process with ``builder`` imported from the checkout ROOT
(another commit's worktree works: the editable install's redirect is taken out) under cProfile,
and prints the distinct functions of ``builder`` that ran (module bodies, class bodies and
comprehensions left out), the modules they are in, and the calls made to them."""

import contextlib
import cProfile
import io
import os
import pstats
import sys

root = sys.argv[1]
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "ScikitBuildRedirectingFinder"]
sys.path.insert(0, root)
import builder

assert builder.__file__.startswith(root), builder.__file__
from builder.cli import cli

prof = cProfile.Profile()
out = io.StringIO()
with contextlib.redirect_stdout(out):
    prof.enable()
    try:
        cli.main(sys.argv[2:], standalone_mode=False)
    except SystemExit:
        pass
    prof.disable()
st = pstats.Stats(prof)
funcs = [
    k
    for k in st.stats
    if k[0].startswith(root + "/builder")
    and k[2] not in ("<module>", "<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>")
]
funcs = [
    k
    for k in funcs
    if not all(c[2] == "<built-in method builtins.__build_class__>" for c in st.stats[k][4])
]
mods = {k[0] for k in funcs}
calls = sum(st.stats[k][1] for k in funcs)
print(f"{len(funcs)} distinct builder functions in {len(mods)} modules, {calls} calls")
if os.environ.get("LIST"):
    for m in sorted(mods):
        print("  ", m[len(root) + 1 :], sum(1 for k in funcs if k[0] == m))
