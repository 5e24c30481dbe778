#!/usr/bin/env bash
# scikit-learn on a GPU machine, in one call: a quick calibration (with each target's start-up, and
# its prices for a large fit), the scikit-learn scripts run once in fresh processes (`cold_start
# --sklearn --timeline`: each run watched, benchmarks/timeline.py), where the seconds of a run with
# each GPU forced go, then scikit-learn's own test suite under accelerate() with
# CuPy and torch-cuda forced, its long modules split over pytest-xdist workers. Files under $OUT
# (eight at most); each step is bounded (SKL_*_S), and the suite gets what is left of SKL_TOTAL_S.
#
#   WHL=path/to/.whl bash benchmarks/gpu_sklearn.sh     # the wheels of benchmarks/gpu_wheels.sh (folders, space-separated)
#   SKL_STOCK_FROM=DIR ...   # stock outcomes from a CPU machine's run (sklearn_suite --stock-from)
set -uo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
OUT=${OUT:-/tmp/gpu-sklearn-out}
mkdir -p "$OUT"
LOG=$OUT/log.txt
WORK=${SKL_WORK:-/tmp/peer-work}
WHL=${WHL:-../../.whl}
wheels=$(for d in $WHL; do ls $d/platformdirs-*.whl $d/array_api_compat-*.whl $d/pytest_xdist-*.whl $d/execnet-*.whl; done \
    2> /dev/null)
if [ -n "$wheels" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        $wheels && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 DISPATCH_CACHE_DIR=${SKL_CACHE_DIR:-/tmp/dispatch-cache}
unset PYTHONDONTWRITEBYTECODE
python3 - <<'PY' || echo "fast path not built"
import subprocess, sysconfig, numpy
out = "dispatch/arrays/_fastpath" + sysconfig.get_config_var("EXT_SUFFIX")
subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-I" + sysconfig.get_paths()["include"], "-I" + numpy.get_include(),
                "dispatch/arrays/_fastpath.c", "-o", out], check=True)
PY
# the machine's load, threads and GPU every 5 s, for the whole call
(while sleep 5; do echo "$((SECONDS - START))s load $(cut -d' ' -f1-4 /proc/loadavg) threads $(ls /proc/*/task 2> /dev/null \
    | grep -c '^[0-9]') gpu $(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader 2> /dev/null)"; \
    done) > "$OUT/load.txt" 2>&1 &
SAMPLER=$!
{ nvidia-smi -L 2>&1 | head -2; echo "cores $(nproc)"; python3 -c "import numpy, scipy, sklearn, torch, cupy, xdist
print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'sklearn', sklearn.__version__, 'torch', torch.__version__,
      'cupy', cupy.__version__, 'xdist', xdist.__version__)" 2>&1 | tail -1; } | tee "$LOG"
[ -n "${SKL_SKIP_CALIBRATION:-}" ] || {
    timeout "${SKL_CALIBRATE_S:-60}" python3 -m dispatch calibrate --quick >> "$LOG" 2>&1
    tail -2 "$LOG"
}
python3 - <<'PY' 2>&1 | tee -a "$LOG"
# the start-up the calibration measured, and what it prices the traced fit at on each target
import json
import numpy as np
from dispatch.routing import calibration, router, startup
from dispatch.sklearn import _price
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
cal = calibration.load()
print("startup", json.dumps(cal.extra.get("startup") if cal else None))
if cal is not None:
    router.ROUTER.calibration_checked = True
    router.use_calibration(cal)
    X = np.broadcast_to(np.zeros(1), (1_000_000, 150))
    for method in ("fit", "predict"):
        prices = _price.seconds(LinearDiscriminantAnalysis, method, X, (X[:, 0],))
        print(f"LDA 1M x 150 {method} priced:", {k: round(v, 3) for k, v in prices.items()},
              "start-up:", {k: round(startup.seconds(k), 3) for k in prices})
PY

echo "== cold start, scikit-learn scripts, each run watched ($((SECONDS - START)) s)" | tee -a "$LOG"
timeout "${SKL_COLD_S:-150}" python3 -m benchmarks.cold_start --sklearn --rows "${SKL_ROWS:-lda=1000000,lda=20000}" \
    --repeats 1 --timeline --json "$OUT/cold_sklearn.json" > "$OUT/cold_sklearn.txt" 2>&1
grep -v "^  -- " "$OUT/cold_sklearn.txt"

echo "== each GPU forced, where run 1 spent its seconds ($((SECONDS - START)) s)" | tee -a "$LOG"
for rows in ${SKL_TRACE_ROWS:-1000000}; do
    for backend in ${SKL_TRACE_BACKENDS:-cupy torch-cuda}; do
        cache=$(mktemp -d); cp "$DISPATCH_CACHE_DIR"/calibration-*.json "$cache"/ 2> /dev/null
        echo "-- lda $rows --accelerate, $backend forced" >> "$LOG"
        DISPATCH_CACHE_DIR=$cache DISPATCH_BACKEND=$backend timeout "${SKL_TRACE_S:-30}" python3 -m benchmarks.timeline -- \
            python3 benchmarks/sklearn_scripts/lda.py "$rows" --accelerate >> "$LOG" 2>&1
    done
done
grep -A12 "^-- lda" "$LOG" | cut -c1-240 | head -40

left=$(( ${SKL_TOTAL_S:-235} - (SECONDS - START) - 12 ))
echo "== scikit-learn's test suite, ${left} s per module ($((SECONDS - START)) s)" | tee -a "$LOG"
if [ "$left" -gt 20 ]; then
    timeout "$((left + 8))" python3 -m benchmarks.peer.sklearn_suite --backend "${SKL_BACKENDS:-cupy,torch-cuda}" \
        --jobs "${SKL_JOBS:-16}" --workers "${SKL_WORKERS:-1}" --timeout "$left" --max-rss 16384 --work "$WORK" \
        ${SKL_STOCK_FROM:+--stock-from "$SKL_STOCK_FROM"} --json "$OUT/peer_sklearn.json" ${SKL_MODULES:-} \
        > "$OUT/peer_sklearn.txt" 2>&1
    grep -v "^\[" "$OUT/peer_sklearn.txt"
    { echo "== failures in the logs"; grep -h "FAILED\|Error" "$WORK"/*.log 2> /dev/null | sort | uniq -c \
        | sort -rn | head -40; } >> "$OUT/peer_sklearn.txt"
    tar czf "$OUT/peer_records.tgz" -C "$WORK" --exclude='*.log' --exclude=dispatch-cache . 2> /dev/null
fi
kill $SAMPLER 2> /dev/null
echo "== done ($((SECONDS - START)) s)" | tee -a "$LOG"
