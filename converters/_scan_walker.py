"""The AST walk behind ``converters.scanner``: resolves import aliases, follows simple
assignments, and reports each NumPy, scikit-learn and PyTorch call it recognises.

Flow model, kept simple on purpose:

- Statements are read in source order; the last assignment seen wins, whatever branch it is
  in. An assignment the walker cannot evaluate forgets what the name held.
- Names live in scopes as Python resolves them: a function sees its own names, then the
  enclosing functions', then the module's (never a class body's). Function bodies are read
  after the code that defines them has run, so they see the module's final imports and
  variables, as they do when they are called.
- Parameters and anything returned by user functions are unknown.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from converters._static_values import (
    ARRAY,
    AXIS_REDUCTIONS,
    BUNCH,
    CONSTANT,
    ESTIMATOR,
    GENERATOR,
    METHOD,
    MODULE,
    MODULE_CLASS,
    NUMBER,
    OPTIMIZER,
    PIPELINE,
    REF,
    TUPLE,
    Args,
    Value,
    array,
    elementwise,
    estimator,
    matmul_shape,
    numpy_shape,
    random_shape,
    reduced,
    reshaped,
    size_of,
    sklearn_function_result,
    torch_shape,
    transformed_shape,
)
from converters.pytorch_operations import PYTORCH_CATALOG
from converters.sklearn_algorithms import SKLEARN_CATALOG
from dispatch.base.numpy_catalog import NUMPY_CATALOG

NUMPY, SKLEARN, PYTORCH = "numpy", "scikit-learn", "pytorch"

# Roots whose functions are NumPy's. Calls under ``dispatch`` that the catalog lacks are
# dispatch's own API, not NumPy calls left unclassified.
_NUMPY_ROOTS = ("numpy", "dispatch")

_SKLEARN_BY_PATH = {entry.counterparts["sklearn"]: name for name, entry in SKLEARN_CATALOG.items()}


def _is_method_path(path: str) -> bool:
    """``optim.Optimizer.step`` names a method (a class, then a lower-case name)."""
    parts = path.split(".")
    return len(parts) > 1 and parts[-2][:1].isupper()


_TORCH_BY_PATH = {
    f"torch.{path}": name
    for name, entry in PYTORCH_CATALOG.items()
    if (path := entry.counterparts.get("torch")) and not _is_method_path(path)
}
# Methods of tensors, modules and optimisers that the catalog names, by method name.
_TORCH_METHOD_OPS = {
    path.rsplit(".", 1)[1]: name
    for name, entry in PYTORCH_CATALOG.items()
    if (path := entry.counterparts.get("torch")) and _is_method_path(path)
} | {"backward": "Backward"}
# torch functions that are also Tensor methods (``x.sum()``, ``a.matmul(b)``).
_TENSOR_METHODS = frozenset({"add", "mul", "reshape", "sum", "mean", "matmul", "bmm"})
_TORCH_MODULE_BASES = ("torch.nn.Module", "torch.nn.modules.module.Module")
# Tensor methods that give a tensor of the same shape; module methods that give the module.
_TENSOR_SAME_SHAPE = frozenset({"to", "float", "double", "half", "cpu", "cuda", "detach", "clone", "contiguous"})
_MODULE_RETURNS_SELF = frozenset({"to", "train", "eval", "cpu", "cuda", "float", "double", "half", "requires_grad_"})
# torch functions whose result is a tensor the walker follows: creations (sized by their
# output) and ops (sized by their largest input).
_TORCH_CREATIONS = frozenset(
    {"tensor", "as_tensor", "from_numpy", "asarray", "zeros", "ones", "empty", "full", "rand", "randn",
     "arange", "linspace", "eye"}
)  # fmt: skip
_TORCH_OPS = frozenset({"add", "mul", "reshape", "cat", "sum", "mean", "matmul", "bmm", "einsum"})

# ndarray methods that are catalog ops of the same name (a meta-test checks both facts).
ARRAY_METHODS = frozenset({
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "astype", "choose", "clip", "compress",
    "conj", "conjugate", "copy", "cumprod", "cumsum", "diagonal", "dot", "max", "mean", "min", "nonzero",
    "partition", "prod", "put", "ravel", "repeat", "reshape", "round", "searchsorted", "sort", "squeeze",
    "std", "sum", "swapaxes", "take", "trace", "transpose", "var",
})  # fmt: skip
_ARRAY_SAME_SHAPE = frozenset({"astype", "copy", "round", "clip", "conj", "conjugate"})
# Generator methods named differently from the legacy function the catalog lists.
_GENERATOR_ALIASES = {"integers": "randint"}
# numpy.random calls whose result is no array.
_NOT_ARRAYS = frozenset(
    {"random.seed", "random.shuffle", "random.get_state", "random.set_state", "random.get_bit_generator",
     "random.set_bit_generator", "random.bytes"}
)  # fmt: skip

SKLEARN_METHODS = frozenset({
    "fit", "partial_fit", "predict", "predict_proba", "predict_log_proba", "decision_function", "transform",
    "fit_transform", "fit_predict", "inverse_transform", "score", "score_samples", "kneighbors",
    "radius_neighbors",
})  # fmt: skip
_FITS = frozenset({"fit", "fit_transform", "fit_predict", "partial_fit"})

# A receiver named like an optimiser: ``optimizer``, ``opt``, ``g_optim``, ``self.optimizer``.
_OPTIMIZER_NAME = re.compile(r"(^|_)(opt|optim|optimi[sz]er)(_|$)", re.IGNORECASE)

_ARITHMETIC = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Div: lambda a, b: a / b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}
_LARGEST_NUMBER = 10**18  # arithmetic beyond this is no array size
_LARGEST_EXPONENT = 64  # 10**10**9 in a source file must not take the scanner's time


@dataclass(frozen=True)
class Found:
    """A recognised call: the node (for its position), what it calls and what it knows."""

    node: ast.AST
    library: str
    name: str
    op: str | None
    shape: tuple[int, ...] | None
    method: str | None = None


class _Scope:
    __slots__ = ("is_class", "names", "parent")

    def __init__(self, parent: _Scope | None, is_class: bool = False) -> None:
        self.names: dict[str, Value | None] = {}
        self.parent = parent
        self.is_class = is_class

    def lookup(self, name: str) -> Value | None:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None

    def function_parent(self) -> _Scope:
        """The scope a function defined here resolves free names in: class bodies are skipped."""
        scope = self
        while scope.is_class and scope.parent is not None:
            scope = scope.parent
        return scope


def classify(qualname: str) -> tuple[str | None, str | None]:
    """``"numpy.linalg.svd"`` -> ``("numpy", "linalg.svd")``; library ``None``: not a call of
    the three libraries (or dispatch's own API); op ``None``: not in the catalog."""
    root, _, rest = qualname.partition(".")
    if root in _NUMPY_ROOTS:
        if rest in NUMPY_CATALOG:
            return NUMPY, rest
        return (NUMPY, None) if root == "numpy" and rest else (None, None)
    if root == "sklearn" and rest:
        last = qualname.rsplit(".", 1)[1]
        op = _SKLEARN_BY_PATH.get(qualname) or (last if last in SKLEARN_CATALOG else None)
        return SKLEARN, op
    if root == "torch" and rest:
        return PYTORCH, _TORCH_BY_PATH.get(qualname)
    return None, None


def _star_names(module: str) -> dict[str, str]:
    """The catalog names ``from <module> import *`` binds: ``{"svd": "numpy.linalg.svd"}``."""
    root, _, sub = module.partition(".")
    if root in _NUMPY_ROOTS:
        prefix = f"{sub}." if sub else ""
        return {
            name[len(prefix) :]: f"{module}.{name[len(prefix) :]}"
            for name in NUMPY_CATALOG
            if name.startswith(prefix) and "." not in name[len(prefix) :]
        }
    paths = [*_SKLEARN_BY_PATH, *_TORCH_BY_PATH]
    return {path.rsplit(".", 1)[1]: path for path in paths if path.rsplit(".", 1)[0] == module}


class Walker:
    """Walks modules (or notebook cells, one after another: names carry over) and collects
    ``Found`` records; ``take_found()`` hands them over."""

    def __init__(self) -> None:
        self.module = _Scope(None)
        self.scope = self.module
        self.uses_torch = False
        self._found: list[Found] = []
        self._deferred: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, _Scope]] = []

    def walk(self, tree: ast.Module) -> None:
        self._body(tree.body)
        while self._deferred:
            function, parent = self._deferred.pop(0)
            self._function_body(function, parent)

    def take_found(self) -> list[Found]:
        found, self._found = self._found, []
        return found

    def _report(
        self,
        node: ast.AST,
        library: str,
        name: str,
        op: str | None,
        shape: tuple[int, ...] | None,
        method: str | None = None,
    ) -> None:
        self._found.append(Found(node, library, name, op, shape, method))

    # ---- statements -------------------------------------------------------------------------

    def _body(self, statements: list[ast.stmt]) -> None:
        for statement in statements:
            self._stmt(statement)

    def _stmt(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Import):
            self._import(node)
        elif isinstance(node, ast.ImportFrom):
            self._import_from(node)
        elif isinstance(node, ast.Assign):
            value = self._expr(node.value)
            for target in node.targets:
                self._bind(target, value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self._bind(node.target, self._expr(node.value))
        elif isinstance(node, ast.AugAssign):
            self._aug_assign(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._define_function(node)
        elif isinstance(node, ast.ClassDef):
            self._define_class(node)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self._expr(node.iter)
            self._bind(node.target, None)
            self._body(node.body)
            self._body(node.orelse)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                self._expr(item.context_expr)
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, None)
            self._body(node.body)
        else:
            self._generic(node)

    def _generic(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self._stmt(child)
            elif isinstance(child, ast.expr):
                self._expr(child)
            else:
                self._generic(child)

    def _import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.uses_torch |= alias.name.split(".")[0] == "torch"
            if alias.asname:
                self.scope.names[alias.asname] = Value(REF, alias.name)
            else:
                root = alias.name.split(".")[0]
                self.scope.names[root] = Value(REF, root)

    def _import_from(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self.uses_torch |= node.level == 0 and module.split(".")[0] == "torch"
        for alias in node.names:
            if node.level:  # relative: this project's own code
                if alias.name != "*":
                    self.scope.names[alias.asname or alias.name] = None
            elif alias.name == "*":
                for name, qualname in _star_names(module).items():
                    self.scope.names[name] = Value(REF, qualname)
            else:
                self.scope.names[alias.asname or alias.name] = Value(REF, f"{module}.{alias.name}")

    def _define_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for expr in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]:
            if expr is not None:
                self._expr(expr)
        self.scope.names[node.name] = None
        self._deferred.append((node, self.scope.function_parent()))

    def _function_body(self, node: ast.FunctionDef | ast.AsyncFunctionDef, parent: _Scope) -> None:
        outer, self.scope = self.scope, _parameter_scope(node.args, parent)
        self._body(node.body)
        self.scope = outer

    def _define_class(self, node: ast.ClassDef) -> None:
        for expr in node.decorator_list:
            self._expr(expr)
        bases = [self._expr(base) for base in node.bases]
        for keyword in node.keywords:
            self._expr(keyword.value)
        outer, self.scope = self.scope, _Scope(self.scope, is_class=True)
        self._body(node.body)
        self.scope = outer
        is_module = any(
            base is not None and (base.kind == MODULE_CLASS or (base.kind == REF and base.name in _TORCH_MODULE_BASES))
            for base in bases
        )
        self.scope.names[node.name] = Value(MODULE_CLASS, node.name) if is_module else None

    def _aug_assign(self, node: ast.AugAssign) -> None:
        value = self._expr(node.value)
        if not isinstance(node.target, ast.Name):
            self._bind(node.target, None)
            return
        current = self.scope.lookup(node.target.id)
        if isinstance(node.op, ast.MatMult):
            result = self._matmul(node, current, value)
        else:
            result = self._arithmetic(node.op, current, value)
        self.scope.names[node.target.id] = result

    def _bind(self, target: ast.expr, value: Value | None) -> None:
        if isinstance(target, ast.Name):
            self.scope.names[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            elements = target.elts
            if value is not None and value.kind == TUPLE and len(value.items) == len(elements):
                parts = list(value.items)
            elif value is not None and value.kind == ARRAY:  # unpacking arrays gives arrays
                parts = [array(value.name or NUMPY, None)] * len(elements)
            else:
                parts = [None] * len(elements)
            if any(isinstance(e, ast.Starred) for e in elements):
                parts = [None] * len(elements)
            for element, part in zip(elements, parts, strict=True):
                self._bind(element, part)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, None)
        elif isinstance(target, ast.Attribute):
            self._expr(target.value)
        elif isinstance(target, ast.Subscript):
            self._expr(target.value)
            self._expr(target.slice)

    # ---- expressions ------------------------------------------------------------------------

    def _expr(self, node: ast.expr) -> Value | None:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or node.value is None:
                return Value(CONSTANT, repr(node.value))
            if isinstance(node.value, (int, float)):
                return Value(NUMBER, number=node.value)
            return None
        if isinstance(node, ast.Name):
            return self.scope.lookup(node.id)
        if isinstance(node, ast.Attribute):
            return self._attribute(self._expr(node.value), node.attr)
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.BinOp):
            left, right = self._expr(node.left), self._expr(node.right)
            if isinstance(node.op, ast.MatMult):
                return self._matmul(node, left, right)
            return self._arithmetic(node.op, left, right)
        if isinstance(node, ast.UnaryOp):
            operand = self._expr(node.operand)
            if isinstance(node.op, ast.USub) and operand is not None and operand.kind == NUMBER:
                return Value(NUMBER, number=-operand.number)  # type: ignore[operator]
            return operand if operand is not None and operand.kind == ARRAY else None
        if isinstance(node, ast.Compare):
            operands = [self._expr(node.left), *(self._expr(c) for c in node.comparators)]
            library = next((v.name for v in operands if v is not None and v.kind == ARRAY), None)
            return elementwise(operands, library) if library else None
        if isinstance(node, (ast.Tuple, ast.List)):
            items = tuple(self._expr(e) for e in node.elts)
            return None if any(isinstance(e, ast.Starred) for e in node.elts) else Value(TUPLE, items=items)
        if isinstance(node, ast.Subscript):
            base = self._expr(node.value)
            index = self._expr(node.slice)
            return self._subscript(base, index)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            self._comprehension(node)
            return None
        if isinstance(node, ast.Lambda):
            self._lambda(node)
            return None
        if isinstance(node, ast.NamedExpr):
            value = self._expr(node.value)
            self._bind(node.target, value)
            return value
        self._generic(node)
        return None

    def _arithmetic(self, op: ast.operator, left: Value | None, right: Value | None) -> Value | None:
        if left is not None and right is not None and left.kind == NUMBER and right.kind == NUMBER:
            if isinstance(op, ast.Pow) and not abs(right.number) <= _LARGEST_EXPONENT:  # type: ignore[arg-type]
                return None
            try:
                result = _ARITHMETIC[type(op)](left.number, right.number)
            except (KeyError, ArithmeticError, ValueError):
                return None
            return Value(NUMBER, number=result) if abs(result) <= _LARGEST_NUMBER else None
        library = next((v.name for v in (left, right) if v is not None and v.kind == ARRAY), None)
        return elementwise([left, right], library) if library else None

    def _subscript(self, base: Value | None, index: Value | None) -> Value | None:
        if base is None:
            return None
        if base.kind == ARRAY:
            return array(base.name or NUMPY, None)
        if base.kind == TUPLE and index is not None and index.kind == NUMBER and isinstance(index.number, int):
            if -len(base.items) <= index.number < len(base.items):
                return base.items[index.number]
        return None

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        outer, self.scope = self.scope, _Scope(self.scope)
        for generator in node.generators:
            self._expr(generator.iter)
            self._bind(generator.target, None)
            for condition in generator.ifs:
                self._expr(condition)
        if isinstance(node, ast.DictComp):
            self._expr(node.key)
            self._expr(node.value)
        else:
            self._expr(node.elt)
        self.scope = outer

    def _lambda(self, node: ast.Lambda) -> None:
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self._expr(default)
        outer, self.scope = self.scope, _parameter_scope(node.args, self.scope)
        self._expr(node.body)
        self.scope = outer

    def _attribute(self, base: Value | None, attr: str) -> Value | None:
        if base is None:
            return Value(METHOD, attr, items=(None,))
        if base.kind == REF:
            return Value(REF, f"{base.name}.{attr}")
        if base.kind == BUNCH:
            return {"data": base.items[0], "target": base.items[1]}.get(attr)
        if base.kind == ARRAY and attr in ("T", "mT"):
            return array(base.name or NUMPY, None if base.shape is None else base.shape[::-1])
        if base.kind == ARRAY and attr in ("shape", "size", "ndim", "dtype", "real", "imag"):
            return None
        return Value(METHOD, attr, items=(base,))

    def _matmul(self, node: ast.AST, left: Value | None, right: Value | None) -> Value | None:
        library = next((v.name for v in (left, right) if v is not None and v.kind == ARRAY), None)
        if library is None:
            return None
        shape = _largest([left, right])
        if library == PYTORCH:
            self._report(node, PYTORCH, "torch.matmul", "MatMul", shape)
        else:
            self._report(node, NUMPY, "numpy.matmul", "matmul", shape)
        return array(library, matmul_shape(left, right))

    # ---- calls ------------------------------------------------------------------------------

    def _call(self, node: ast.Call) -> Value | None:
        callee = self._expr(node.func)
        positional = [self._expr(a.value if isinstance(a, ast.Starred) else a) for a in node.args]
        keywords = {kw.arg: self._expr(kw.value) for kw in node.keywords if kw.arg is not None}
        for kw in node.keywords:
            if kw.arg is None:
                self._expr(kw.value)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(kw.arg is None for kw in node.keywords):
            positional, keywords = [], {}  # unpacked arguments: positions are unknown
        args: Args = (positional, keywords)
        if callee is None:
            return None
        if callee.kind == REF:
            return self._call_name(node, callee.name or "", args)
        if callee.kind == METHOD:
            return self._call_method(node, callee.name or "", callee.items[0], args)
        if callee.kind == MODULE:
            op = _TORCH_BY_PATH.get(callee.name or "") or "Forward"
            self._report(node, PYTORCH, f"{callee.name}.__call__", op, _largest(positional), "__call__")
            return array(PYTORCH, None)
        if callee.kind == MODULE_CLASS:
            return Value(MODULE, callee.name)
        return None

    def _call_name(self, node: ast.Call, qualname: str, args: Args) -> Value | None:
        library, op = classify(qualname)
        if library == NUMPY:
            return self._numpy_call(node, qualname, op, args)
        if library == SKLEARN:
            return self._sklearn_call(node, qualname, op, args)
        if library == PYTORCH:
            return self._torch_call(node, qualname, op, args)
        return None

    def _numpy_call(self, node: ast.Call, qualname: str, op: str | None, args: Args) -> Value | None:
        if op is None:
            self._report(node, NUMPY, qualname, None, None)
            return Value(GENERATOR) if qualname.endswith((".RandomState", ".Generator")) else None
        work = NUMPY_CATALOG[op].work
        shape = numpy_shape(op, work, args)
        self._report(node, NUMPY, qualname, op, shape if work in ("create", "random") else _largest_arg(args))
        if op == "random.default_rng":
            return Value(GENERATOR)
        if work == "host" or op in _NOT_ARRAYS:
            return None
        return array(NUMPY, shape)

    def _sklearn_call(self, node: ast.Call, qualname: str, op: str | None, args: Args) -> Value | None:
        self._report(node, SKLEARN, qualname, op, None)
        if op is not None:
            return estimator(op, args)
        function = qualname.rsplit(".", 1)[1]
        positional, keywords = args
        if function == "make_pipeline":
            return Value(PIPELINE, items=tuple(positional))
        if function == "Pipeline":
            steps = keywords.get("steps", positional[0] if positional else None)
            if steps is not None and steps.kind == TUPLE:
                pairs = [s for s in steps.items if s is not None and s.kind == TUPLE and len(s.items) == 2]
                if len(pairs) == len(steps.items):
                    return Value(PIPELINE, items=tuple(s.items[1] for s in pairs))
            return None
        return sklearn_function_result(function, args)

    def _torch_call(self, node: ast.Call, qualname: str, op: str | None, args: Args) -> Value | None:
        path = qualname.removeprefix("torch.")
        function = path.rsplit(".", 1)[-1]
        if path.startswith("optim.") and not path.startswith("optim.lr_scheduler") and function[:1].isupper():
            self._report(node, PYTORCH, qualname, op, None)
            return Value(OPTIMIZER, qualname)
        if path.startswith("nn.") and path.count(".") == 1 and function[:1].isupper():
            self._report(node, PYTORCH, qualname, op, None)
            return Value(MODULE, qualname)
        if "." in path or function not in _TORCH_CREATIONS | _TORCH_OPS:
            self._report(node, PYTORCH, qualname, op, _largest_arg(args))
            return None
        shape = torch_shape(function, args)
        self._report(node, PYTORCH, qualname, op, shape if function in _TORCH_CREATIONS else _largest_arg(args))
        return array(PYTORCH, shape)

    def _call_method(self, node: ast.Call, attr: str, receiver: Value | None, args: Args) -> Value | None:
        kind = receiver.kind if receiver is not None else None
        if kind == ARRAY and receiver.name == NUMPY:  # type: ignore[union-attr]
            return self._array_method(node, attr, receiver, args)  # type: ignore[arg-type]
        if kind == ARRAY:
            return self._tensor_method(node, attr, receiver, args)  # type: ignore[arg-type]
        if kind == GENERATOR:
            return self._generator_method(node, attr, args)
        if kind == ESTIMATOR:
            return self._estimator_method(node, attr, receiver, args)  # type: ignore[arg-type]
        if kind == PIPELINE:
            return self._pipeline_method(node, attr, receiver, args)  # type: ignore[arg-type]
        if kind == MODULE:
            return self._module_method(node, attr, receiver, args)  # type: ignore[arg-type]
        if kind == OPTIMIZER and attr in ("step", "zero_grad"):
            self._report(node, PYTORCH, f"torch.optim.Optimizer.{attr}", _TORCH_METHOD_OPS[attr], None, attr)
            return None
        if kind is None and self.uses_torch:
            self._torch_heuristics(node, attr)
        return None

    def _array_method(self, node: ast.Call, attr: str, receiver: Value, args: Args) -> Value | None:
        if attr not in ARRAY_METHODS:
            return None
        positional, keywords = args
        self._report(node, NUMPY, f"numpy.ndarray.{attr}", attr, _largest([receiver, *positional]), attr)
        shape = receiver.shape
        if attr in _ARRAY_SAME_SHAPE:
            return array(NUMPY, shape)
        if attr == "reshape":
            return array(NUMPY, reshaped(receiver, list(positional) or [keywords.get("shape")]))
        if attr == "transpose" and not positional:
            return array(NUMPY, None if shape is None else shape[::-1])
        if attr == "ravel":
            return array(NUMPY, None if shape is None else (size_of(shape),))
        if attr == "dot":
            return array(NUMPY, matmul_shape(receiver, positional[0] if positional else None))
        if attr in AXIS_REDUCTIONS:
            axis = positional[0] if positional else keywords.get("axis")
            return array(NUMPY, reduced(receiver, axis, keywords.get("keepdims")))
        return array(NUMPY, None)

    def _tensor_method(self, node: ast.Call, attr: str, receiver: Value, args: Args) -> Value | None:
        op = _TORCH_BY_PATH.get(f"torch.{attr}") if attr in _TENSOR_METHODS else _TORCH_METHOD_OPS.get(attr)
        if op in ("Forward", "OptimizerStep", "ZeroGrad"):
            op = None
        if op is not None:
            self._report(node, PYTORCH, f"torch.Tensor.{attr}", op, _largest([receiver, *args[0]]), attr)
        if attr in _TENSOR_SAME_SHAPE:
            return array(PYTORCH, receiver.shape)
        return array(PYTORCH, None) if attr in _TENSOR_METHODS else None

    def _generator_method(self, node: ast.Call, attr: str, args: Args) -> Value | None:
        op = f"random.{_GENERATOR_ALIASES.get(attr, attr)}"
        if op not in NUMPY_CATALOG:
            return None
        shape = random_shape(attr, args)
        self._report(node, NUMPY, f"numpy.random.Generator.{attr}", op, shape, attr)
        return None if op in _NOT_ARRAYS else array(NUMPY, shape)

    def _estimator_method(self, node: ast.Call, attr: str, receiver: Value, args: Args) -> Value | None:
        if attr not in SKLEARN_METHODS:
            return None
        data = _first(args, "X")
        shape = data.shape if data is not None and data.kind == ARRAY else None
        path = SKLEARN_CATALOG[receiver.name or ""].counterparts["sklearn"]
        self._report(node, SKLEARN, f"{path}.{attr}", receiver.name, shape, attr)
        return _estimator_result(attr, receiver, shape)

    def _pipeline_method(self, node: ast.Call, attr: str, pipeline: Value, args: Args) -> Value | None:
        """A pipeline's method runs on every step: ``fit`` fit-transforms each step but the last."""
        if attr not in SKLEARN_METHODS:
            return None
        data = _first(args, "X")
        shape = data.shape if data is not None and data.kind == ARRAY else None
        steps = pipeline.items
        result = None
        for position, step in enumerate(steps):
            last = position == len(steps) - 1
            method = attr if last else ("fit_transform" if attr in _FITS else "transform")
            if step is None or step.kind != ESTIMATOR:
                shape = None  # an unknown step: the shapes after it are unknown
                continue
            path = SKLEARN_CATALOG[step.name or ""].counterparts["sklearn"]
            self._report(node, SKLEARN, f"{path}.{method}", step.name, shape, method)
            result = _estimator_result(method, step, shape)
            shape = transformed_shape(step, shape)
        return pipeline if attr in ("fit", "partial_fit") else result

    def _module_method(self, node: ast.Call, attr: str, module: Value, args: Args) -> Value | None:
        if attr in ("to", "zero_grad"):
            self._report(node, PYTORCH, f"torch.nn.Module.{attr}", _TORCH_METHOD_OPS[attr], None, attr)
        elif attr == "forward":
            op = _TORCH_BY_PATH.get(module.name or "") or "Forward"
            self._report(node, PYTORCH, f"{module.name}.forward", op, _largest(args[0]), attr)
            return array(PYTORCH, None)
        return module if attr in _MODULE_RETURNS_SELF else None

    def _torch_heuristics(self, node: ast.Call, attr: str) -> None:
        """Calls on receivers of unknown type, in a file that imports torch: ``.backward()``
        and ``.zero_grad()`` are autograd's own names; ``.step()`` counts only on a receiver
        named like an optimiser (schedulers have ``.step()`` too)."""
        if attr in ("backward", "zero_grad"):
            owner = "Tensor" if attr == "backward" else "nn.Module"
            self._report(node, PYTORCH, f"torch.{owner}.{attr}", _TORCH_METHOD_OPS[attr], None, attr)
        elif attr == "step" and _OPTIMIZER_NAME.search(_receiver_name(node)):
            self._report(node, PYTORCH, "torch.optim.Optimizer.step", _TORCH_METHOD_OPS[attr], None, attr)


def _parameter_scope(arguments: ast.arguments, parent: _Scope) -> _Scope:
    """A function's scope on entry: its parameters, of unknown value."""
    scope = _Scope(parent)
    for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]:
        if arg is not None:
            scope.names[arg.arg] = None
    return scope


def _receiver_name(node: ast.Call) -> str:
    """``optimizer`` for ``optimizer.step()`` and ``self.optimizer.step()``."""
    receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
    if isinstance(receiver, ast.Name):
        return receiver.id
    if isinstance(receiver, ast.Attribute):
        return receiver.attr
    return ""


def _estimator_result(method: str, receiver: Value, shape: tuple[int, ...] | None) -> Value | None:
    if method in ("fit", "partial_fit"):
        return receiver
    if method in ("transform", "fit_transform"):
        return array(NUMPY, transformed_shape(receiver, shape))
    if method in ("predict", "fit_predict"):
        return array(NUMPY, None if not shape else shape[:1])
    return None


def _first(args: Args, keyword: str) -> Value | None:
    positional, keywords = args
    return positional[0] if positional else keywords.get(keyword)


def _largest(values) -> tuple[int, ...] | None:
    """The shape of the largest array among ``values`` (and inside tuple/list literals).

    ``None`` if any of them is unknown: it may be the largest array, and a size read from the
    others would understate the call."""
    shapes = []
    for value in values:
        items = value.items if value is not None and value.kind == TUPLE else (value,)
        for item in items:
            if item is None or (item.kind == ARRAY and item.shape is None):
                return None
            if item.kind == ARRAY:
                shapes.append(item.shape)
    return max(shapes, key=size_of, default=None)


def _largest_arg(args: Args) -> tuple[int, ...] | None:
    """``_largest`` of the positional arguments (keywords are options: ``axis=``, ``dtype=``)."""
    return _largest(args[0])
