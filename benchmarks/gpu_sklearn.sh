#!/usr/bin/env bash
# scikit-learn on a GPU machine, in one call: a quick calibration (with each target's start-up),
# the scikit-learn scripts run once in fresh processes (`cold_start --sklearn`), where run 1 of
# each kind sent its calls (traced), then scikit-learn's own test suite under accelerate() with
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
WHL=${WHL:-../../.whl}
wheels=$(for d in $WHL; do ls $d/platformdirs-*.whl $d/array_api_compat-*.whl $d/pytest_xdist-*.whl $d/execnet-*.whl; done \
    2> /dev/null)
if [ -n "$wheels" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        $wheels && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 DISPATCH_CACHE_DIR=/tmp/dispatch-cache
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
python3 -c "from dispatch.routing import calibration as c; import json; d = c.load(); print(json.dumps(d.extra.get('startup') if d else None))" | tee -a "$LOG"

echo "== cold start, scikit-learn scripts ($((SECONDS - START)) s)" | tee -a "$LOG"
timeout "${SKL_COLD_S:-150}" python3 -m benchmarks.cold_start --sklearn --rows "${SKL_ROWS:-lda=1000000,lda=20000}" \
    --repeats 1 --json "$OUT/cold_sklearn.json" > "$OUT/cold_sklearn.txt" 2>&1
cat "$OUT/cold_sklearn.txt"

echo "== where run 1 sent each call ($((SECONDS - START)) s)" | tee -a "$LOG"
for rows in ${SKL_TRACE_ROWS:-1000000}; do
    for kind in ${SKL_TRACE_KINDS:---accelerate run}; do
        cache=$(mktemp -d); cp /tmp/dispatch-cache/calibration-*.json "$cache"/ 2> /dev/null
        echo "-- lda $rows $kind, run 1" >> "$LOG"
        if [ $kind = run ]; then cmd=(python3 -m dispatch run benchmarks/sklearn_scripts/lda.py "$rows")
        else cmd=(python3 benchmarks/sklearn_scripts/lda.py "$rows" --accelerate); fi
        DISPATCH_CACHE_DIR=$cache DISPATCH_TRACE=1 timeout "${SKL_TRACE_S:-30}" "${cmd[@]}" >> "$LOG" 2>&1
    done
done
grep -i "^--\|LinearDiscriminantAnalysis\|lda rows" "$LOG" | cut -c1-240 | head -20

left=$(( ${SKL_TOTAL_S:-235} - (SECONDS - START) - 12 ))
echo "== scikit-learn's test suite, ${left} s per module ($((SECONDS - START)) s)" | tee -a "$LOG"
if [ "$left" -gt 20 ]; then
    timeout "$((left + 8))" python3 -m benchmarks.peer.sklearn_suite --backend "${SKL_BACKENDS:-cupy,torch-cuda}" \
        --jobs "${SKL_JOBS:-16}" --workers "${SKL_WORKERS:-1}" --timeout "$left" --max-rss 16384 --work /tmp/peer-work \
        ${SKL_STOCK_FROM:+--stock-from "$SKL_STOCK_FROM"} --json "$OUT/peer_sklearn.json" ${SKL_MODULES:-} \
        > "$OUT/peer_sklearn.txt" 2>&1
    grep -v "^\[" "$OUT/peer_sklearn.txt"
    { echo "== failures in the logs"; grep -h "FAILED\|Error" /tmp/peer-work/*.log 2> /dev/null | sort | uniq -c \
        | sort -rn | head -40; } >> "$OUT/peer_sklearn.txt"
    tar czf "$OUT/peer_records.tgz" -C /tmp/peer-work --exclude='*.log' --exclude=dispatch-cache . 2> /dev/null
fi
kill $SAMPLER 2> /dev/null
echo "== done ($((SECONDS - START)) s)" | tee -a "$LOG"
