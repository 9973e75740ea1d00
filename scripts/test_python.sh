#!/usr/bin/env bash
# The Python package's tests: the project venv with the pinned build and test requirements
# (scripts/requirements-py.txt), `pip install .` into it (scikit-build-core; the build folder
# build/python/ and ccache are kept between runs, so a second install rebuilds only what changed),
# then pytest python/tests against the C++ build ($BUILD_DIR: its CLI generates the test devices,
# its sim:/tlm: plugins are used when built).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${NORMCORE_VENV:-$root/.venv}
bash "$root/scripts/venv.sh" "$venv" py
export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-build-isolation \
  --no-deps "$root"
cd "$root"
NORMCORE_BUILD=${BUILD_DIR:-$root/build} "$venv/bin/python" -m pytest -p no:cacheprovider -q \
  python/tests
