"""Process state the call path reads on every call: the forced target and the switches that
turn the fast path off (a forced target, tracing, history sampling).

Kept in one small object so the hot path reads one attribute (``STATE.plain``). A trace turns
the compiled fast path off but not the floors (``STATE.floored``): a traced call under them runs
on NumPy as it would untraced, and is recorded. NumPy forced for the whole process
(``set_backend("numpy")``, ``DISPATCH_BACKEND=numpy``) is the host shortcut at every size
(``STATE.host_only``): each call on host data is NumPy's, as the router's forced rule would
decide, without asking it.
"""

from __future__ import annotations

import contextvars

from dispatch.base.settings import ENV

__all__ = ["STATE"]

_AUTO = "auto"


class _State:
    __slots__ = ("_active_using", "_global_forced", "exact", "floored", "host_only", "observers", "plain", "tracing")

    def __init__(self) -> None:
        self._global_forced: str | None = None  # set_backend / DISPATCH_BACKEND
        self._active_using = 0  # `using` blocks open in any thread
        self.tracing = 0  # open trace contexts (and DISPATCH_TRACE)
        self.observers = 0  # other per-call listeners (history sampling)
        self.plain = True  # nothing above is set: the fast path may skip routing
        self.floored = True  # nothing but a trace is set: calls under the floors still skip it (recorded)
        self.host_only = False  # NumPy forced globally, nothing else set: every host call skips it
        # Strict mode: ops that may differ from NumPy in the last bits stay on NumPy (the router's
        # first rule; ``router.set_exact`` changes it). The floors run NumPy: they need not know.
        self.exact = ENV.exact

    def refresh(self) -> None:
        quiet = not (self._active_using or self.observers)
        self.host_only = quiet and self._global_forced == "numpy"
        self.floored = quiet and (not self._global_forced or self.host_only)
        self.plain = self.floored and not self.tracing

    # The forced target ---------------------------------------------------------------------

    def forced_name(self) -> str | None:
        """The target name forced here (innermost ``using`` first, then ``set_backend``)."""
        local = _using.get()
        return local if local is not None else self._global_forced

    def set_global(self, name: str | None) -> None:
        self._global_forced = None if name in (None, _AUTO) else name
        self.refresh()

    def push_using(self, name: str) -> contextvars.Token:
        self._active_using += 1
        self.refresh()
        return _using.set(name)

    def pop_using(self, token: contextvars.Token) -> None:
        _using.reset(token)
        self._active_using -= 1
        self.refresh()


# `using("auto")` inside `using("cupy")` restores routing: "auto" is stored, read as None.
_using: contextvars.ContextVar[str | None] = contextvars.ContextVar("dispatch_using", default=None)

STATE = _State()

STATE.set_global(ENV.backend)  # DISPATCH_BACKEND, checked by dispatch.base.settings
