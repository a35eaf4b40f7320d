#!/usr/bin/env bash
# Install metallib-builder and what it needs on a fresh Debian/Ubuntu machine.
#   bash scripts/setup.sh          the tool (pip install .), with the host C++ compiler and zlib
#                                  headers that building its JIT host library needs, and the
#                                  OpenSSL headers its C extension hashes modules with
#   bash scripts/setup.sh --test   the same plus the test dependencies (LLVM tools, Chromium)
# System packages are installed only when missing, so a second run is quick.
set -euo pipefail
cd "$(dirname "$0")/.."

want_tests=0
[[ "${1:-}" == "--test" ]] && want_tests=1

missing=()
command -v g++ >/dev/null || missing+=(g++)
[[ -f /usr/include/zlib.h ]] || missing+=(zlib1g-dev)
[[ -f /usr/include/openssl/evp.h ]] || missing+=(libssl-dev)
if ((want_tests)); then
  command -v llvm-dis >/dev/null || missing+=(llvm)
  command -v chromium >/dev/null || missing+=(chromium)
fi
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: please install: ${missing[*]} (apt-get install ${missing[*]})" >&2
    exit 2
  fi
  echo "setup: apt-get install ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ((want_tests)); then
  python -m pip install --quiet --disable-pip-version-check --root-user-action=ignore '.[test]'
else
  python -m pip install --quiet --disable-pip-version-check --root-user-action=ignore .
fi
echo "setup: installed $(metallib-builder --version)" >&2
