"""The writes to an array that dispatch sees, each made to a dispatch array ``x`` and to NumPy's
``ref`` alike: the mirror tests (both directions) check that each one drops the other side's
copies, so that what is read next equals ``ref``."""

from __future__ import annotations

import numpy

import dispatch

N = 1 << 18  # 2 MiB of float64: over mirrors.MIN_BYTES


def _setitem(x, ref):
    x[5] = -1.0
    ref[5] = -1.0


def _setitem_slice(x, ref):
    x[10:20] = 3.0
    ref[10:20] = 3.0


def _iadd(x, ref):
    x += 1.0
    ref += 1.0


def _out(x, ref):
    dispatch.add(x, 1.5, out=x)
    numpy.add(ref, 1.5, out=ref)


def _numpy_out(x, ref):
    numpy.multiply(x, 0.5, out=x)
    numpy.multiply(ref, 0.5, out=ref)


def _ufunc_positional_out(x, ref):
    dispatch.negative(x, x)
    numpy.negative(ref, ref)


def _view_setitem(x, ref):
    v = x[100:200]
    v[3] = 42.0
    ref[103] = 42.0


def _view_iadd(x, ref):
    v = x.reshape(512, -1)
    v += 2.0
    ref += 2.0


def _fill(x, ref):
    x.fill(7.0)
    ref.fill(7.0)


def _copyto(x, ref):
    src = numpy.linspace(0.0, 1.0, N)
    dispatch.copyto(x, src)
    numpy.copyto(ref, src)


def _put(x, ref):
    dispatch.put(x, [0, 1, 2], [9.0, 8.0, 7.0])
    numpy.put(ref, [0, 1, 2], [9.0, 8.0, 7.0])


def _ufunc_at(x, ref):
    dispatch.add.at(x, [0, 0, 5], 1.0)
    numpy.add.at(ref, [0, 0, 5], 1.0)


def _flat(x, ref):
    x.flat[7] = -7.0
    ref.flat[7] = -7.0


def ewma(xp, means, lam=0.2):
    """Not a write: an exponentially weighted moving average by its recurrence, a scalar loop over a
    reduction's result, each element read and written from Python."""
    z = xp.empty_like(means)
    z[0] = means[0]
    for i in range(1, len(means)):
        z[i] = lam * means[i] + (1 - lam) * z[i - 1]
    return z
