#!/usr/bin/env bash
# The cold-start figures on a GPU machine, most needed first: a quick calibration (with each
# target's start-up), the import cost, the scikit-learn scripts, GPU-friendly programs sized to
# 2 s or more on NumPy, and the validation half. Files under $OUT; each step is bounded
# (COLD_*_S) so that the later ones still run; COLD_STEPS names the cold-start steps to run
# (default: sklearn gpu validation; tuning also exists), each best of COLD_REPEATS rounds (default 1).
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
python3 -c "import torch, cupy, sklearn.discriminant_analysis, sklearn.decomposition" 2>&1 | tail -1  # bytecode written once
python3 -m benchmarks.import_cost --repeats 5 | tee "$OUT/import.txt"
python3 -m dispatch calibrate --quick > "$OUT/calibrate.txt" 2>&1; tail -3 "$OUT/calibrate.txt"
python3 -c "from dispatch.routing import calibration as c; import json; print(json.dumps(c.load().extra.get('startup')))" | tee -a "$OUT/calibrate.txt"
step() {  # name, seconds, arguments of benchmarks.cold_start
    local name=$1 limit=$2; shift 2
    [[ " ${COLD_STEPS:-sklearn gpu validation} " == *" $name "* ]] || return 0
    echo "== $name ($(date +%T))"
    timeout "$limit" python3 -m benchmarks.cold_start "$@" --repeats "${COLD_REPEATS:-1}" --json "$OUT/cold_$name.json" \
        > "$OUT/cold_$name.txt" 2> "$OUT/cold_$name.log"
    cat "$OUT/cold_$name.txt"; tail -n 4 "$OUT/cold_$name.log"
}
step sklearn "${COLD_SKLEARN_S:-120}" --sklearn --rows "${COLD_SKLEARN_ROWS:-lda=20000,lda=1000000}"
step gpu "${COLD_GPU_S:-80}" --only fft_denoise,kernel_density,knn_classifier --targets numpy,cupy,torch-cuda \
    --sizes "${COLD_GPU_SIZES:-fft_denoise=20000,kernel_density=300000,knn_classifier=7500}"
step validation "${COLD_VALIDATION_S:-60}" --half validation --targets "${COLD_VALIDATION_TARGETS:-numpy}"
step tuning "${COLD_TUNING_S:-60}" --half tuning --targets "${COLD_TUNING_TARGETS:-numpy}"
