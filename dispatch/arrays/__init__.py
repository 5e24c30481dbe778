"""``dispatch.ndarray``, wrapping results, the call path and the compiled fast path. Imports
the layers below (``routing``, ``targets``, ``base``)."""
