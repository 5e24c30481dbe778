"""The compiled fast path is optional: without a C compiler dispatch installs as pure Python."""

import numpy
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "dispatch.arrays._fastpath",
            ["dispatch/arrays/_fastpath.c"],
            include_dirs=[numpy.get_include()],
            optional=True,
        )
    ]
)
