"""Host <-> device copies: dispatch's pinned staging against plain (pageable) copies, in one run.

    python -m benchmarks.transfers [--out transfers.json]

For each GPU target here and each size, the bandwidth of ``target.from_host`` /
``target.to_host`` (staged through pinned buffers above 1 MiB, as an array's first send goes),
of a later send of the same array (its memory locked in place), and of the library's own plain
copy (``cupy.asarray`` / ``cupy.asnumpy``, ``tensor.to(device)`` / ``.cpu()``), interleaved;
and, as the bound, a copy from memory that is already pinned.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import numpy

from dispatch import targets
from dispatch.targets import _staging

SIZES_MB = (1, 4, 16, 64, 256)


def _time(fn: Any, sync: Any, repeat: int = 7) -> float:
    fn()
    sync()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _plain(target: Any) -> tuple[Any, Any]:
    if target.library == "cupy":
        cp = target.cupy
        return cp.asarray, cp.asnumpy
    torch, device = target.torch, target.tdevice
    return (lambda a: torch.from_numpy(a).to(device)), (lambda t: t.cpu().numpy())


def _from_pinned(target: Any, host: numpy.ndarray) -> Any:
    """A copy to the device from a pinned copy of ``host``: the bus's speed, no host memcpy."""
    if target.library == "cupy":
        import cupyx

        pinned = cupyx.empty_pinned(host.shape, host.dtype)
        pinned[...] = host
        return lambda: target.cupy.asarray(pinned, blocking=False)
    torch = target.torch
    pinned = torch.from_numpy(host).pin_memory()
    return lambda: pinned.to(target.tdevice, non_blocking=True)


def measure(target: Any) -> list[dict[str, float]]:
    rows = []
    plain_in, plain_out = _plain(target)
    for mb in SIZES_MB:
        host = numpy.random.default_rng(0).standard_normal(mb * (1 << 20) // 8)
        native = target.from_host(host)
        sync = target.synchronize
        with _staging.no_locking():
            staged_in = _time(lambda h=host: target.from_host(h), sync)
        direct_in = _time(lambda h=host: plain_in(h), sync)  # before the array is locked
        locked_in = _time(lambda h=host: target.from_host(h), sync)  # sent again: locked in place
        pinned_in = _time(_from_pinned(target, host), sync)
        staged_out = _time(lambda n=native: target.to_host(n), sync)
        direct_out = _time(lambda n=native: plain_out(n), sync)
        assert numpy.array_equal(target.to_host(target.from_host(host)), host)
        gb = host.nbytes / 1e9
        rows.append({"MB": mb, "to_device_staged_GBs": gb / staged_in, "to_device_locked_GBs": gb / locked_in,
                     "to_device_plain_GBs": gb / direct_in,
                     "to_device_from_pinned_GBs": gb / pinned_in,
                     "to_host_staged_GBs": gb / staged_out, "to_host_plain_GBs": gb / direct_out})
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    result = {}
    for name in ("cupy", "torch-cuda"):
        target = targets.probe(name)
        if target is None:
            continue
        rows = result[name] = measure(target)
        print(f"{name}: GB/s  {'MB':>5} {'in staged':>10} {'in locked':>10} {'in plain':>9} {'in pinned':>10} "
              f"{'out staged':>11} {'out plain':>10}")
        for r in rows:
            print(f"{'':10}{r['MB']:>5} {r['to_device_staged_GBs']:>10.1f} {r['to_device_locked_GBs']:>10.1f} "
                  f"{r['to_device_plain_GBs']:>9.1f} "
                  f"{r['to_device_from_pinned_GBs']:>10.1f} "
                  f"{r['to_host_staged_GBs']:>11.1f} {r['to_host_plain_GBs']:>10.1f}")
    if not result:
        print("no GPU target here: nothing to measure")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    main()
