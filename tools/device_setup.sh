#!/bin/bash
# Builds .gpu/ (git-ignored) for the device tool (../.library/device/README.md), which carries only the
# checkout: the shared wheels (pycuda for the device, xdsl, ...), the reference kernels and TileLang's
# examples, plus the test runner's wheels for the device's Python 3.12, and .gpu/install.sh, which a
# device command runs first:
#
#     bash tools/device_setup.sh            # here, once per checkout
#     run(command="bash .gpu/install.sh && python -m pytest -m gpu -n 8 tests", carry=[".gpu"])
#
# On the device, install with `python -m pip`: its bare `pip` belongs to another Python (session 27).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu
cp -r ../shared/wheels ../shared/kernels ../shared/tilelang-examples .gpu/
exclude="$(git rev-parse --git-path info/exclude)"
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >> "$exclude"
python -m pip download -q --no-deps --python-version 3.12 --only-binary=:all: -d .gpu/wheels \
    pytest pytest-xdist execnet pluggy iniconfig packaging filecheck
cat > .gpu/install.sh <<'INSTALL'
#!/bin/bash
# tilec and its wheels on the device machine (from tools/device_setup.sh); quiet unless it fails.
cd "$(dirname "$0")/.." || exit 1
log="${OUT:-/tmp}/pip.log"
python -m pip install -q --no-index --no-deps .gpu/wheels/*.whl > "$log" 2>&1 &&
    python -m pip install -q --no-index --no-deps --no-build-isolation --use-pep517 -e . >> "$log" 2>&1 &&
    python -c "import tilec, xdsl, pycuda" || { tail -5 "$log"; exit 1; }
INSTALL
echo ".gpu/ ready: $(ls .gpu/wheels | wc -l) wheels; start device commands with 'bash .gpu/install.sh &&'"
