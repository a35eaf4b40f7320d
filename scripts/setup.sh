#!/usr/bin/env bash
# Install metallib-builder into a virtual environment, .venv/ in this checkout, on a fresh
# Debian/Ubuntu machine that has nothing but python3:
#   bash scripts/setup.sh          the tool, then run it as .venv/bin/metallib-builder
#   bash scripts/setup.sh --test   an editable install plus the test dependencies (pytest, LLVM,
#                                  Chromium); run the tests as .venv/bin/python -m pytest
# Why a virtual environment: Debian's python3 refuses `pip install` into the system
# (PEP 668, "externally managed"), and a venv keeps the tool's cmake/ninja off the system.
# System packages (compilers, headers, python3-venv) are installed with apt only when missing,
# so a second run is quick. PYTHON=/path/to/python3 chooses another interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."

want_tests=0
case "${1:-}" in
  "") ;;
  --test) want_tests=1 ;;
  *) echo "usage: bash scripts/setup.sh [--test]" >&2; exit 2 ;;
esac

started=$SECONDS
step() { printf 'setup [%3ds]: %s\n' "$((SECONDS - started))" "$*" >&2; }

python=${PYTHON:-python3}
if ! command -v "$python" >/dev/null; then
  echo "setup: $python not found: install Python 3.10 or newer (apt-get install python3)" >&2
  exit 2
fi
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "setup: $("$python" --version 2>&1) is too old: metallib-builder needs Python 3.10+" >&2
  exit 2
fi

# What the build needs: a C/C++ compiler for the JIT host library and the container reader's C
# extension, zlib and OpenSSL headers, Python's own headers, and venv with pip (Debian splits
# ensurepip into python3-venv).
missing=()
command -v g++ >/dev/null || missing+=(g++)
[[ -f /usr/include/zlib.h ]] || missing+=(zlib1g-dev)
[[ -f /usr/include/openssl/evp.h ]] || missing+=(libssl-dev)
"$python" - <<'PY' || missing+=(python3-dev)
import os, sys, sysconfig
sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")))
PY
if [[ ! -x .venv/bin/python ]]; then
  "$python" -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
fi
if ((want_tests)); then
  command -v llvm-dis >/dev/null || missing+=(llvm)
  command -v chromium >/dev/null || missing+=(chromium)
  # clang + lld make real Mach-O and ELF binaries holding metallibs (tests/binaries.py)
  command -v clang >/dev/null || missing+=(clang)
  command -v ld.lld >/dev/null || missing+=(lld)
fi
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: please install: ${missing[*]} (sudo apt-get install ${missing[*]})" >&2
    exit 2
  fi
  step "apt-get install ${missing[*]} (a few minutes on a fresh machine)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ! -x .venv/bin/python ]]; then
  step "creating the virtual environment .venv with $("$python" --version 2>&1)"
  "$python" -m venv .venv
fi

# The tests run from the checkout (`python -m pytest` puts it first on sys.path), so they import
# this folder's builder/ package; an editable install maps its compiled parts (the C extension
# builder.metallib._native, the JIT host library) into it. The plain set-up installs a copy.
install=(.)
((want_tests)) && install=(-e '.[test]')
step "pip install ${install[*]} into .venv: downloads CMake and Ninja, then compiles the C extension and the JIT host library (about a minute)"
set +e
.venv/bin/python -m pip install --disable-pip-version-check --progress-bar off "${install[@]}" 2>&1 |
  tee .venv/pip-install.log | grep --line-buffered -E '^(Collecting|Building|Successfully)' >&2
status=${PIPESTATUS[0]}
set -e
if ((status)); then
  tail -n 30 .venv/pip-install.log >&2
  echo "setup: pip install failed (exit $status); the whole log is .venv/pip-install.log" >&2
  exit 1
fi
step "installed: $(.venv/bin/metallib-builder --version | tr '\n' ' ')"
step "run it as .venv/bin/metallib-builder (or: source .venv/bin/activate)"
