#!/usr/bin/env bash
# The cold-start figures on a GPU machine: a quick calibration (with each target's start-up), the
# import cost, and the cold-start benchmark's validation half, one round. Files under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
WHL=${WHL:-../../.whl}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    $WHL/platformdirs-*.whl $WHL/array_api_compat-*.whl && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD:$PYTHONPATH PYTHONUNBUFFERED=1 DISPATCH_CACHE_DIR=/tmp/dispatch-cache
unset PYTHONDONTWRITEBYTECODE
python3 - <<'PY' || echo "fast path not built"
import subprocess, sysconfig, numpy
out = "dispatch/arrays/_fastpath" + sysconfig.get_config_var("EXT_SUFFIX")
subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-I" + sysconfig.get_paths()["include"], "-I" + numpy.get_include(),
                "dispatch/arrays/_fastpath.c", "-o", out], check=True)
PY
nvidia-smi -L
python3 -c "import torch, cupy" 2>&1 | tail -1   # bytecode written once, as an install leaves it
python3 -m benchmarks.import_cost --repeats 5 | tee "$OUT/import.txt"
python3 -m dispatch calibrate --quick > "$OUT/calibrate.txt" 2>&1; tail -3 "$OUT/calibrate.txt"
python3 -c "from dispatch.routing import calibration as c; import json; print(json.dumps(c.load().extra.get('startup')))" | tee -a "$OUT/calibrate.txt"
timeout "${COLD_TIMEOUT:-300}" python3 -m benchmarks.cold_start --half validation --repeats 1 \
    --json "$OUT/cold_validation.json" > "$OUT/cold_validation.txt" 2> "$OUT/cold_validation.log"
cat "$OUT/cold_validation.txt"; tail -n 15 "$OUT/cold_validation.log"
