#!/usr/bin/env bash
# scikit-learn on a GPU machine, in one call: a quick calibration (with each target's start-up),
# the scikit-learn scripts run once in fresh processes (`cold_start --sklearn`), where run 1 of
# each script sent its calls (traced), then scikit-learn's own test suite stock and under
# accelerate() with CuPy and torch-cuda forced, many pytest processes at once. Files under $OUT;
# each step is bounded (SKL_*_S) so that the later ones still run. Eight files at most.
#
#   WHL=path/to/.whl bash benchmarks/gpu_sklearn.sh     # the wheels of benchmarks/gpu_wheels.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-sklearn-out}
mkdir -p "$OUT"
WHL=${WHL:-../../.whl}
if ls $WHL/platformdirs-*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        $WHL/platformdirs-*.whl $WHL/array_api_compat-*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 DISPATCH_CACHE_DIR=/tmp/dispatch-cache
unset PYTHONDONTWRITEBYTECODE
python3 - <<'PY' || echo "fast path not built"
import subprocess, sysconfig, numpy
out = "dispatch/arrays/_fastpath" + sysconfig.get_config_var("EXT_SUFFIX")
subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-I" + sysconfig.get_paths()["include"], "-I" + numpy.get_include(),
                "dispatch/arrays/_fastpath.c", "-o", out], check=True)
PY
nvidia-smi -L 2>&1 | head -2
nproc
python3 -c "import torch, cupy, sklearn.discriminant_analysis, sklearn.decomposition" 2>&1 | tail -1  # bytecode once
[ -n "${SKL_SKIP_CALIBRATION:-}" ] || {
    timeout "${SKL_CALIBRATE_S:-90}" python3 -m dispatch calibrate --quick > "$OUT/calibrate.txt" 2>&1
    tail -3 "$OUT/calibrate.txt"
}
python3 -c "from dispatch.routing import calibration as c; import json; d = c.load(); print(json.dumps(d.extra.get('startup') if d else None))" | tee -a "$OUT/calibrate.txt"

echo "== cold start, scikit-learn scripts ($(date +%T))"
timeout "${SKL_COLD_S:-150}" python3 -m benchmarks.cold_start --sklearn --rows "${SKL_ROWS:-lda=20000,lda=1000000}" \
    --repeats 1 --json "$OUT/cold_sklearn.json" > "$OUT/cold_sklearn.txt" 2>&1
cat "$OUT/cold_sklearn.txt"

echo "== where run 1 sent each call ($(date +%T))"
for rows in ${SKL_TRACE_ROWS:-20000 1000000}; do
    cache=$(mktemp -d); cp /tmp/dispatch-cache/calibration-*.json "$cache"/ 2> /dev/null
    echo "-- lda $rows, run 1" >> "$OUT/trace.txt"
    DISPATCH_CACHE_DIR=$cache DISPATCH_TRACE=1 timeout 60 python3 benchmarks/sklearn_scripts/lda.py "$rows" --accelerate \
        >> "$OUT/trace.txt" 2>&1
done
grep -i "^--\|LinearDiscriminantAnalysis\|lda rows" "$OUT/trace.txt" | cut -c1-240 | head -20

echo "== scikit-learn's test suite ($(date +%T))"
timeout "${SKL_PEER_S:-240}" python3 -m benchmarks.peer.sklearn_suite --backend "${SKL_BACKENDS:-cupy,torch-cuda}" \
    --jobs "${SKL_JOBS:-20}" --timeout "${SKL_MODULE_S:-200}" --max-rss 16384 --work /tmp/peer-work \
    --json "$OUT/peer_sklearn.json" ${SKL_MODULES:-} > "$OUT/peer_sklearn.txt" 2>&1
grep -v "^\[" "$OUT/peer_sklearn.txt"
grep -h "FAILED\|Error" /tmp/peer-work/*.log 2> /dev/null | sort | uniq -c | sort -rn | head -40 > "$OUT/peer_failures.txt"
echo "== done ($(date +%T))"
