"""NumPy's ``Generator(PCG64)`` streams drawn in parallel, bit for bit.

``pcg64``: the generator at many positions at once (jump-ahead); ``tables``: NumPy's ziggurat
tables; ``transforms``: NumPy's output transforms, one attempt per position; ``scan``: which
attempts NumPy's loop makes, and their outputs; ``calls``: which calls are drawn so;
``reference``: all of it in NumPy on the host; ``kernels`` / ``device``: the same on a CUDA
device through CuPy.
"""
