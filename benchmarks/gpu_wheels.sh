#!/usr/bin/env bash
# The wheels the GPU machine lacks, downloaded here into .whl/ (gitignored), for
# benchmarks/gpu_run.sh to install there (that machine has no internet).
#
#   bash benchmarks/gpu_wheels.sh        # then carry .whl/ to the GPU machine
#
# The GPU image (Python 3.12, x86_64) has numpy, cupy-cuda13x, cuda-core, numba, nvidia-ml-py,
# pandas, scipy, click, cloudpickle, fsspec, jinja2, msgpack, packaging, psutil, pyyaml,
# sortedcontainers, toolz and urllib3. Missing, from the Requires-Dist lines of what we need:
#   dask              click cloudpickle fsspec packaging partd pyyaml toolz
#   distributed       dask jinja2 locket msgpack psutil sortedcontainers tblib tornado zict ...
#   dask-cuda         click cuda-core numpy nvidia-ml-py pandas zict, rapids-dask-dependency
#   partd             locket toolz
#   array-api-compat  (none)
#   libcst            pyyaml (the migrate tests)
#   platformdirs      (none: the cache folder)
#   pytest-xdist      execnet, pytest (the peer suites' modules split over workers)
# rapids-dask-dependency only pins dask to 2026.7.x (and pulls bokeh); dask-cuda does not import
# it, so it is left out and dask / distributed are the versions the CPU tests use.
# One version each; --no-deps, so exactly this list lands.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl \
    array-api-compat==1.16.0 \
    dask==2026.8.0 \
    distributed==2026.8.0 \
    dask-cuda==26.10.0 \
    partd==1.4.2 \
    locket==1.0.0 \
    tornado==6.6.1 \
    tblib==3.2.2 \
    zict==3.0.0 \
    libcst==1.9.0 \
    platformdirs==4.14.8 \
    pytest-xdist==3.8.0 \
    execnet==2.1.2
ls -l .whl/*.whl | awk '{printf "%8.1f kB  %s\n", $5 / 1000, $NF}'
du -ch .whl/*.whl | tail -n 1
