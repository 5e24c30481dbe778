"""What the scanner knows about a value without running the code, and the rules that give
array shapes from literal arguments.

Only what is visible in the source counts: literal numbers and tuples, the shape arguments
of creation and random calls, the documented shapes of scikit-learn's bundled datasets and
generators, and shapes carried through simple assignments. Anything else is unknown
(``None``), never a guess.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

# Value kinds.
REF = "ref"  # a module or library object, by dotted name: "numpy.linalg"
NUMBER = "number"  # an int or float literal (or arithmetic on literals)
CONSTANT = "constant"  # True, False or None; name is its repr
TUPLE = "tuple"  # a tuple or list literal, or a function's several results
ARRAY = "array"  # a numpy array or torch tensor; name says which library
GENERATOR = "generator"  # numpy.random.Generator or RandomState
ESTIMATOR = "estimator"  # a scikit-learn estimator of the catalog; name is the op
PIPELINE = "pipeline"  # a scikit-learn pipeline; items are its steps
BUNCH = "bunch"  # a scikit-learn dataset Bunch; items are (data, target)
MODULE = "module"  # a torch.nn.Module instance; name is the op, or None outside the catalog
MODULE_CLASS = "module-class"  # a class of this source that subclasses torch.nn.Module
OPTIMIZER = "optimizer"  # a torch.optim optimizer
METHOD = "method"  # an attribute of a known value; name is the attribute, items[0] the owner


@dataclass(frozen=True)
class Value:
    """A statically known value (see the kinds above)."""

    kind: str
    name: str | None = None
    shape: tuple[int, ...] | None = None
    number: float | None = None
    items: tuple[Value | None, ...] = field(default=())


Args = tuple[Sequence["Value | None"], dict[str, "Value | None"]]


def array(library: str, shape: tuple[int, ...] | None) -> Value:
    return Value(ARRAY, library, shape)


def size_of(shape: tuple[int, ...] | None) -> int | None:
    """Number of elements of ``shape``; ``None`` when unknown."""
    return None if shape is None else math.prod(shape)


def as_int(value: Value | None) -> int | None:
    if value is not None and value.kind == NUMBER and isinstance(value.number, int) and value.number >= 0:
        return value.number
    return None


def as_shape(value: Value | None) -> tuple[int, ...] | None:
    """A shape argument: an int, or a tuple/list of ints."""
    if value is None:
        return None
    if value.kind == NUMBER:
        n = as_int(value)
        return None if n is None else (n,)
    if value.kind == TUPLE:
        dims = [as_int(item) for item in value.items]
        return None if None in dims else tuple(dims)  # type: ignore[arg-type]
    return None


def literal_shape(value: Value | None) -> tuple[int, ...] | None:
    """The shape of a nested list/tuple literal of numbers, or of an array."""
    if value is None:
        return None
    if value.kind == ARRAY:
        return value.shape
    if value.kind == NUMBER:
        return ()
    if value.kind == TUPLE:
        inner = {literal_shape(item) for item in value.items}
        if len(inner) == 1 and None not in inner:
            return (len(value.items), *inner.pop())
        return (0,) if not value.items else None
    return None


def broadcast(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
    """NumPy broadcasting of known shapes; ``None`` if they do not broadcast."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(-ndim, 0):
        dims = {s[axis] for s in shapes if len(s) >= -axis} - {1}
        if len(dims) > 1:
            return None
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def elementwise(operands: Sequence[Value | None], library: str) -> Value:
    """The array an element-wise op gives: numbers broadcast as scalars, unknowns make the
    shape unknown."""
    shapes = []
    for operand in operands:
        if operand is not None and operand.kind == NUMBER:
            continue
        if operand is None or operand.kind != ARRAY or operand.shape is None:
            return array(library, None)
        shapes.append(operand.shape)
    return array(library, broadcast(shapes))


def matmul_shape(a: Value | None, b: Value | None) -> tuple[int, ...] | None:
    """``a @ b`` for 1-D and 2-D operands of known shape."""
    if a is None or b is None or a.shape is None or b.shape is None:
        return None
    sa, sb = a.shape, b.shape
    if not (1 <= len(sa) <= 2 and 1 <= len(sb) <= 2) or sa[-1] != sb[0]:
        return None
    return sa[:-1] + sb[1:]


def _arg(args: Args, position: int | None, keyword: str | None) -> Value | None:
    positional, keywords = args
    if keyword is not None and keyword in keywords:
        return keywords[keyword]
    if position is not None and position < len(positional):
        return positional[position]
    return None


def is_constant(value: Value | None, name: str) -> bool:
    return value is not None and value.kind == CONSTANT and value.name == name


def _number(value: Value | None) -> float | None:
    return value.number if value is not None and value.kind == NUMBER else None


# ---- NumPy -----------------------------------------------------------------------------------

_SHAPE_FIRST = frozenset({"zeros", "ones", "empty", "full"})
_SAME_SHAPE_AS_FIRST = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "copy", "ascontiguousarray"})
_FROM_DATA = frozenset({"array", "asarray", "asanyarray"})

# Where a numpy.random function (or Generator / RandomState method) takes ``size``.
_SIZE_POSITION = {
    "random": 0, "random_sample": 0, "ranf": 0, "sample": 0, "standard_normal": 0, "standard_cauchy": 0,
    "standard_exponential": 0, "bytes": None, "normal": 2, "uniform": 2, "randint": 2, "integers": 2,
    "lognormal": 2, "laplace": 2, "logistic": 2, "gumbel": 2, "beta": 2, "binomial": 2, "gamma": 2,
    "f": 2, "triangular": 3, "exponential": 1, "poisson": 1, "choice": 1, "rayleigh": 1, "geometric": 1,
    "chisquare": 1, "standard_t": 1, "standard_gamma": 1, "pareto": 1, "power": 1, "weibull": 1,
    "zipf": 1, "logseries": 1, "multivariate_normal": 2,
}  # fmt: skip


def random_shape(name: str, args: Args) -> tuple[int, ...] | None:
    """Output shape of ``numpy.random.<name>`` or ``Generator.<name>`` from literal arguments."""
    positional = args[0]
    if name in ("rand", "randn"):  # legacy: dimensions as separate ints
        dims = [as_int(v) for v in positional]
        return tuple(dims) if dims and None not in dims else None  # type: ignore[arg-type]
    if name == "permutation":
        first = _arg(args, 0, "x")
        return (first.number,) if as_int(first) is not None else literal_shape(first)  # type: ignore[return-value]
    if name == "shuffle":
        return literal_shape(_arg(args, 0, "x"))
    if name not in _SIZE_POSITION:
        return None
    size = _arg(args, _SIZE_POSITION[name], "size")
    shape = as_shape(size)
    if shape is not None and name == "multivariate_normal":  # each draw is a vector of len(mean)
        mean = literal_shape(_arg(args, 0, "mean"))
        shape = shape + mean if mean is not None and len(mean) == 1 else None
    return shape


def numpy_shape(op: str, work: str, args: Args) -> tuple[int, ...] | None:
    """Output shape of the NumPy catalog op ``op`` from literal arguments, where visible."""
    positional, keywords = args
    first = _arg(args, 0, None)
    if op in _SHAPE_FIRST:
        return as_shape(_arg(args, 0, "shape"))
    if op in _SAME_SHAPE_AS_FIRST:
        return literal_shape(_arg(args, 0, "a"))
    if op in _FROM_DATA:
        return literal_shape(_arg(args, 0, "object" if op == "array" else "a"))
    if op == "arange":
        return _arange_shape(args)
    if op in ("linspace", "logspace"):
        num = _arg(args, 2, "num")
        return (50,) if num is None and len(positional) < 3 else as_shape(num)
    if op in ("eye", "tri"):
        rows = as_int(_arg(args, 0, "N"))
        cols = _arg(args, 1, "M")
        cols_n = rows if cols is None or is_constant(cols, "None") else as_int(cols)
        return None if rows is None or cols_n is None else (rows, cols_n)
    if op == "identity":
        n = as_int(_arg(args, 0, "n"))
        return None if n is None else (n, n)
    if op.startswith("random."):
        return random_shape(op.removeprefix("random."), args)
    if work == "map":
        return elementwise(positional, "numpy").shape
    if op in ("matmul", "dot"):
        return matmul_shape(first, _arg(args, 1, None))
    if op == "transpose" and len(positional) == 1 and first is not None and first.shape is not None:
        return first.shape[::-1]
    if op == "reshape":
        return reshaped(first, list(positional[1:2]) or [keywords.get("shape")])
    if op == "ravel" and first is not None and first.shape is not None:
        return (math.prod(first.shape),)
    if op in AXIS_REDUCTIONS:
        return reduced(first, _arg(args, 1, "axis"), keywords.get("keepdims"))
    return None


# Reductions over ``axis`` (a function's second argument, a method's first).
AXIS_REDUCTIONS = frozenset({
    "sum", "mean", "std", "var", "max", "min", "amax", "amin", "prod", "all", "any", "argmax", "argmin",
    "nansum", "nanmean", "nanstd", "nanvar", "nanmax", "nanmin", "nanprod", "median", "nanmedian",
})  # fmt: skip


def reduced(source: Value | None, axis: Value | None, keepdims: Value | None) -> tuple[int, ...] | None:
    """The shape a reduction of ``source`` over a literal ``axis`` (or all axes) leaves."""
    if source is None or source.kind != ARRAY or source.shape is None:
        return None
    shape = source.shape
    if axis is None or is_constant(axis, "None"):
        axes = set(range(len(shape)))
    else:
        items = axis.items if axis.kind == TUPLE else (axis,)
        numbers = [_number(item) for item in items]
        if any(not isinstance(n, int) or not -len(shape) <= n < len(shape) for n in numbers):
            return None
        axes = {n % len(shape) for n in numbers}  # type: ignore[operator]
    if is_constant(keepdims, "True"):
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    if keepdims is not None and not is_constant(keepdims, "False"):
        return None
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _arange_shape(args: Args) -> tuple[int, ...] | None:
    positional, keywords = args
    values = [_number(v) for v in positional]
    if None in values or not 1 <= len(values) <= 3:
        return None
    start, stop, step = (0, values[0], 1) if len(values) == 1 else (*values[:2], values[2] if len(values) == 3 else 1)
    step_kw = keywords.get("step")
    if step_kw is not None:
        step = _number(step_kw)
    if not step:
        return None
    return (max(0, math.ceil((stop - start) / step)),)


def reshaped(source: Value | None, shape_args: list[Value | None]) -> tuple[int, ...] | None:
    """``a.reshape(...)``: the new shape, resolving one ``-1`` from the known size."""
    if len(shape_args) == 1:
        dims_value = shape_args[0]
        items = dims_value.items if dims_value is not None and dims_value.kind == TUPLE else (dims_value,)
    else:
        items = tuple(shape_args)
    dims = []
    for item in items:
        if item is not None and item.kind == NUMBER and item.number == -1:
            dims.append(-1)
        else:
            n = as_int(item)
            if n is None:
                return None
            dims.append(n)
    if dims.count(-1) == 1:
        total = size_of(source.shape) if source is not None else None
        known = math.prod(d for d in dims if d != -1)
        if total is None or known == 0 or total % known:
            return None
        dims[dims.index(-1)] = total // known
    return tuple(dims) if -1 not in dims else None


# ---- PyTorch ---------------------------------------------------------------------------------

_TORCH_SIZED = frozenset({"zeros", "ones", "empty", "rand", "randn", "full"})
_TORCH_FROM_DATA = frozenset({"tensor", "as_tensor", "from_numpy", "asarray"})


def torch_shape(function: str, args: Args) -> tuple[int, ...] | None:
    """Output shape of ``torch.<function>`` from literal arguments, where visible."""
    positional, keywords = args
    if function in _TORCH_SIZED:
        sized = positional[:1] if function == "full" else positional
        if "size" in keywords:
            return as_shape(keywords["size"])
        if len(sized) == 1:
            return as_shape(sized[0])
        dims = [as_int(v) for v in sized]
        return tuple(dims) if dims and None not in dims else None  # type: ignore[arg-type]
    if function in _TORCH_FROM_DATA:
        return literal_shape(_arg(args, 0, "data"))
    if function == "arange":
        return _arange_shape(args)
    if function == "linspace":
        return as_shape(_arg(args, 2, "steps"))
    if function == "eye":
        rows = as_int(_arg(args, 0, "n"))
        cols = _arg(args, 1, "m")
        cols_n = rows if cols is None else as_int(cols)
        return None if rows is None or cols_n is None else (rows, cols_n)
    if function == "matmul":
        return matmul_shape(_arg(args, 0, "input"), _arg(args, 1, "other"))
    return None


# ---- scikit-learn ----------------------------------------------------------------------------

# Generators: (default n_samples, default n_features), as scikit-learn documents them.
_MAKE_DATASET = {"make_classification": (100, 20), "make_regression": (100, 100), "make_blobs": (100, 2)}
# Bundled datasets: (n_samples, n_features), as scikit-learn documents them.
_LOAD_DATASET = {
    "load_iris": (150, 4),
    "load_digits": (1797, 64),
    "load_wine": (178, 13),
    "load_breast_cancer": (569, 30),
    "load_diabetes": (442, 10),
}
_KEEPS_SHAPE = frozenset({
    "StandardScaler", "MinMaxScaler", "MaxAbsScaler", "Normalizer", "Binarizer", "RobustScaler",
    "PowerTransformer", "QuantileTransformer", "KernelCenterer",
})  # fmt: skip
_REDUCES_TO_N_COMPONENTS = frozenset({
    "PCA", "IncrementalPCA", "TruncatedSVD", "KernelPCA", "NMF", "FastICA", "FactorAnalysis",
    "LatentDirichletAllocation", "Nystroem", "RBFSampler",
})  # fmt: skip


def sklearn_function_result(function: str, args: Args) -> Value | None:
    """What a scikit-learn dataset or model-selection function gives, where visible."""
    if function in _MAKE_DATASET:
        samples_default, features_default = _MAKE_DATASET[function]
        samples = _arg(args, 0, "n_samples")
        features = _arg(args, 1, "n_features")
        n = samples_default if samples is None else _samples(samples)
        d = features_default if features is None else as_int(features)
        if n is None or d is None:
            return Value(TUPLE, items=(array("numpy", None), array("numpy", None)))
        return Value(TUPLE, items=(array("numpy", (n, d)), array("numpy", (n,))))
    if function in _LOAD_DATASET:
        n, d = _LOAD_DATASET[function]
        data = (array("numpy", (n, d)), array("numpy", (n,)))
        if "as_frame" in args[1] and not is_constant(args[1]["as_frame"], "False"):
            return None  # a DataFrame: not an array the scanner follows
        if is_constant(args[1].get("return_X_y"), "True"):
            return Value(TUPLE, items=data)
        return Value(BUNCH, items=data)
    if function == "train_test_split":
        return _split(args)
    return None


def _samples(value: Value) -> int | None:
    if value.kind == TUPLE:  # make_blobs takes a count per centre
        counts = [as_int(item) for item in value.items]
        return None if None in counts else sum(counts)  # type: ignore[arg-type]
    return as_int(value)


def _split(args: Args) -> Value:
    """``train_test_split(*arrays, test_size=, train_size=)`` as scikit-learn sizes it."""
    arrays, keywords = args
    first = arrays[0] if arrays else None
    n = first.shape[0] if first is not None and first.kind == ARRAY and first.shape else None
    test, train = keywords.get("test_size"), keywords.get("train_size")
    n_test = n_train = None
    if n is not None:
        n_test, n_train = _split_sizes(n, _number(test), _number(train), test is None, train is None)
    out: list[Value | None] = []
    for value in arrays:
        if value is None or value.kind != ARRAY:
            out += [None, None]
            continue
        known = n_train is not None and bool(value.shape)
        rest = value.shape[1:] if known else ()  # type: ignore[index]
        out.append(array(value.name or "numpy", (n_train, *rest) if known else None))
        out.append(array(value.name or "numpy", (n_test, *rest) if known else None))
    return Value(TUPLE, items=tuple(out))


def _split_sizes(
    n: int, test: float | None, train: float | None, test_missing: bool, train_missing: bool
) -> tuple[int | None, int | None]:
    if test_missing and train_missing:
        test, test_missing = 0.25, False
    n_test = n_train = None
    if not test_missing:
        n_test = math.ceil(test * n) if isinstance(test, float) else test
    if not train_missing:
        n_train = math.floor(train * n) if isinstance(train, float) else train
    if n_train is None and n_test is not None:
        n_train = n - n_test
    elif n_test is None and n_train is not None:
        n_test = n - n_train
    return n_test, n_train


def transformed_shape(estimator: Value | None, shape: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """The shape ``estimator.transform(X)`` gives for ``X`` of ``shape``, where visible."""
    if estimator is None or shape is None or len(shape) != 2:
        return None
    if estimator.name in _KEEPS_SHAPE:
        return shape
    if estimator.number == ALL_COMPONENTS:
        return (shape[0], min(shape))
    if estimator.number is not None:
        return (shape[0], int(estimator.number))
    return None


ALL_COMPONENTS = -1  # PCA's n_components=None: min(n_samples, n_features) components
_DEFAULT_COMPONENTS = {"PCA": ALL_COMPONENTS, "TruncatedSVD": 2, "Nystroem": 100, "RBFSampler": 100}


def estimator(op: str, args: Args) -> Value:
    """A catalog estimator built with ``args``; ``number`` keeps a visible ``n_components``."""
    components = None
    if op in _REDUCES_TO_N_COMPONENTS:
        given = _arg(args, 0, "n_components")
        not_given = not args[0] and "n_components" not in args[1]
        if not_given or is_constant(given, "None"):
            components = _DEFAULT_COMPONENTS.get(op)
        else:
            components = as_int(given)
    return Value(ESTIMATOR, op, number=components)
