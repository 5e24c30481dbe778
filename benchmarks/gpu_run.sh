#!/usr/bin/env bash
# One call on a GPU machine: the GPU test suite, a calibration, and every benchmark, with the
# figures written under $OUT and a short table printed last.
#
#   OUT=/some/dir bash benchmarks/gpu_run.sh [tests|calibrate|overhead|transfers|suite|sklearn|dask|trace|programs ...]
#
# With no arguments every step runs. Runs from the source tree (PYTHONPATH=.), so nothing needs
# building there; wheels that the machine lacks (array-api-compat, dask...) are installed from
# .whl/ if that folder is present (see benchmarks/gpu_wheels.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export DISPATCH_CACHE_DIR=${DISPATCH_CACHE_DIR:-/tmp/dispatch-cache}
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
# The compiled fast path, built in place as an install would build it (without it dispatch runs
# its Python path; `python -m dispatch info` says which).
python3 - <<'PY' || echo "fast path not built: dispatch runs its Python path"
import subprocess, sysconfig, numpy
out = "dispatch/arrays/_fastpath" + sysconfig.get_config_var("EXT_SUFFIX")
subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-I" + sysconfig.get_paths()["include"], "-I" + numpy.get_include(),
                "dispatch/arrays/_fastpath.c", "-o", out], check=True)
PY
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(tests calibrate overhead transfers suite sklearn)
status=0
step() { echo "== $1 ($(date +%T))"; }
# Wait, a minute at most, until the CPUs are mostly idle (sampled from /proc/stat, not the load
# average, which lags by minutes), naming the busiest processes if they are not: a calibration
# right after the test suite once measured NumPy's GEMM at 7.9 GFLOP/s against 471 when quiet.
settle() {
    python3 - <<'PY'
import subprocess, time

def sample():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3] + v[4]

deadline, busy = time.time() + 60, 1.0
while busy > 0.2 and time.time() < deadline:
    t0, i0 = sample()
    time.sleep(1)
    t1, i1 = sample()
    busy = 1 - (i1 - i0) / max(t1 - t0, 1)
print(f"CPUs {busy:.0%} busy")
if busy > 0.2:
    print(subprocess.run(["ps", "-eo", "pid,pcpu,etime,args", "--sort=-pcpu"], capture_output=True,
                         text=True).stdout[:1500])
PY
}

for s in "${steps[@]}"; do
    case "$s" in
    tests)
        step tests
        nvidia-smi -L || true
        python3 -m dispatch info || status=1
        # the tests marked gpu (every test run on cupy, torch-cuda or torch-mps); CI runs the rest.
        # PYTEST_M="" runs the whole suite; PYTEST_K narrows it, as -k does; TESTS_TIMEOUT bounds
        # the step so the later steps still run; TEST_TIMEOUT bounds one test, so a hanging one
        # fails by name; PYTEST_VERBOSITY=-v names every test in the log, even in a run cut short.
        marker=(-m "${PYTEST_M-gpu}")
        [ -z "${PYTEST_M-gpu}" ] && marker=()
        timeout "${TESTS_TIMEOUT:-1200}" python3 -m pytest tests "${PYTEST_VERBOSITY:--q}" -p no:cacheprovider \
            --timeout="${TEST_TIMEOUT:-120}" -n "${TEST_WORKERS:-8}" "${marker[@]}" \
            -o addopts="" -rfEs --junitxml="$OUT/tests.xml" ${PYTEST_K:+-k "$PYTEST_K"} >"$OUT/tests.log" 2>&1 || status=1
        grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -n 60
        tail -n 3 "$OUT/tests.log"
        ;;
    calibrate)
        step calibrate
        settle
        # Timed as an installed dispatch runs: with the bytecode of what a calibration imports
        # written first, as pip compiles it on install (this image sets PYTHONDONTWRITEBYTECODE,
        # which had each run compile torch's Python again: about 4 s of "finding the targets" on an
        # H100 machine).
        # Nothing here calls a kernel, so the full calibration still meets the kernel caches as
        # a fresh machine has them: its children compile what its first calls need.
        bytecode=$(mktemp -d)
        installed() { env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX="$bytecode" "$@"; }
        installed python3 -c "from dispatch import targets; [targets.probe(n) for n in ('torch-cpu', 'cupy', 'torch-cuda')]"
        began=$(date +%s.%N)
        installed python3 -m dispatch calibrate --out "$OUT/calibration.json" || status=1
        python3 -c "import sys; print(f'full calibration: the command {float(sys.argv[1]) - float(sys.argv[2]):.2f} s')" \
            "$(date +%s.%N)" "$began" | tee "$OUT/calibration.txt"
        # Then quick ones, timed as a user runs the command, in a copy of the cache (each stores
        # what it measured, and the later steps route by the full one). The first compiles CuPy's
        # kernels for the quick sizes; the last is the figure.
        quick_cache=$(mktemp -d) && cp -r "$DISPATCH_CACHE_DIR"/. "$quick_cache"/ 2>/dev/null
        for i in 1 2 3; do
            began=$(date +%s.%N)
            DISPATCH_CACHE_DIR="$quick_cache" installed python3 -m dispatch calibrate --quick \
                --out "$OUT/calibration-quick.json" >/dev/null || status=1
            python3 -c "import sys; print(f'quick calibration {sys.argv[1]}: the command {float(sys.argv[2]) - float(sys.argv[3]):.2f} s')" \
                "$i" "$(date +%s.%N)" "$began" | tee "$OUT/calibration-quick.txt"
        done
        rm -rf "$quick_cache" "$bytecode"
        ;;
    overhead)
        step overhead
        python3 -m benchmarks.overhead --out "$OUT/overhead.json" || status=1
        ;;
    transfers)
        step transfers
        python3 -m benchmarks.transfers --out "$OUT/transfers.json" || status=1
        ;;
    suite)
        step suite
        python3 -m benchmarks.suite --out "$OUT/suite.json" ${SUITE_ARGS:-} || status=1
        ;;
    sklearn)
        step sklearn
        python3 -m benchmarks.sklearn_pipelines --out "$OUT/sklearn.json" ${SKLEARN_ARGS:-} || status=1
        ;;
    dask)
        step dask
        python3 -m pytest tests/test_dask_gpu.py -q -p no:cacheprovider -o addopts="" -rfEs \
            >"$OUT/dask-tests.log" 2>&1 || status=1
        tail -n 5 "$OUT/dask-tests.log"
        python3 -m benchmarks.dask_scale --out "$OUT/dask.json" ${DASK_ARGS:-} || status=1
        ;;
    trace)
        step trace
        # where the router sends chosen workloads' calls (TRACE_ARGS: pairs of workload and size,
        # or --programs a,b [--against cupy] for benchmarks/programs)
        python3 -m benchmarks.route_trace ${TRACE_ARGS:-kmeans medium} 2>&1 | tee "$OUT/trace.log" || status=1
        ;;
    programs)
        step programs
        # the warm programs table (PROGRAMS_ARGS: --only a,b, --no-oracle...); about 260 s for all
        # 26 on an H200 without the oracle, written program by program so a cut run keeps them
        python3 -m benchmarks.programs_bench --mode warm --targets "${PROGRAMS_TARGETS:-cupy,numpy,torch-cuda}" \
            ${PROGRAMS_ARGS:-} --json "$OUT/programs-warm.json" >"$OUT/programs-warm.log" 2>&1 || status=1
        python3 -m benchmarks.programs_bench --report "$OUT/programs-warm.json" || status=1
        ;;
    *)
        echo "unknown step $s" >&2
        status=2
        ;;
    esac
done

step summary
python3 -m benchmarks.gpu_summary "$OUT" || status=1
exit $status
