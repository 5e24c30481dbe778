/* The compiled fast path of dispatch's host calls.
 *
 * A call on small host arrays runs on NumPy without asking the router: an operator, an index, a
 * method or a namespace function whose arrays are all NumPy arrays at or under the op's floor.
 * In Python that check, the unwrapping and the wrapping of the result cost 0.3-1.5 us a call,
 * as much as NumPy's own work on arrays of a few thousand elements. Here they cost a fifth.
 *
 * Each routed callable is a `Fast` object: it takes the fast case and hands every other call,
 * unchanged, to the Python function it stands in for (`fallback`), which holds the full rules
 * (dispatch.arrays._array and dispatch.arrays._call). `Fast` binds like a function, so it serves as a method
 * of dispatch.ndarray, and slots (operators, indexing) call it without making a bound method.
 *
 * What it takes is a subset of the Python fast path's cases, decided the same way. "Under the
 * floors" is the host shortcut, dispatch.arrays._call.host_shortcut: at most op.floor elements, or
 * at most op.trip_floor (the floor, raised where NumPy was measured best); tests/test_host_shortcut.py
 * drives both paths on the same calls.
 *   forward    a <op> b          a's data and b (array or Python scalar) on the host, the larger
 *                                size under the floors; where a is a temporary NumPy would reuse
 *                                (256 KiB or more, its data held by it alone), into a, as NumPy's
 *                                elision does, if the result keeps a's dtype and shape
 *   reflected  2.0 <op> a        as forward, with a Python scalar on the left
 *   inplace    a <op>= b         as forward; NumPy writes into a's data
 *   getitem    a[key]            host data, a key of integers, slices, None, Ellipsis and host
 *                                index arrays
 *   setitem    a[key] = v        host data, such a key, a host or scalar value
 *   method     a.max(axis=1), a.dot(b)
 *                                host data under the floors, keywords of plain values only
 *   view       a.T, a.reshape(3, -1), a.astype(float)
 *                                host data, positional plain arguments (NumPy's method, as the
 *                                Python method runs it for host data at any size)
 *   function   np.where(c, x, y) every array on the host under the floors, plain keywords
 *   ufunc      np.abs(x)         as function, for a dispatch.ufunc's op
 *   array_function, array_ufunc
 *              numpy.mean(a), numpy.exp(a): NumPy's own functions and ufuncs given dispatch
 *                                arrays (third-party code), as function, for the ops in the
 *                                table the Python protocol methods fill (`func` holds it)
 *   transform  np.fft.rfft(x, n=...)  as function where its work follows its input's size (not
 *                                padded FFT_PADDED times or more: dispatch.arrays._call.fft_sized)
 *   array      numpy.asarray(a)  __array__ of host data, no dtype asked, no copy: the data itself
 *   copy       a.copy()          host data, at any size
 *   shaped     np.zeros((3, 4))  a creation function whose first argument is the shape, given as
 *                                integers, with plain keywords: where the result has fewer than
 *                                dispatch.cluster.LIVE_ELEMENTS elements, the routed function itself
 *                                (larger results may go to Dask: dispatch.cluster.creation), and
 *                                while device copies are kept under mirror_min / 16 elements
 *                                (larger ones may be made on a device: dispatch.arrays.creations)
 *   range      np.arange(k)      as shaped, for arange of one to three integers
 *
 * Over the floors, a forward, reflected, method, function, ufunc, protocol or transform call of host
 * arrays (or of a list of them: concatenate's) is looked up in dispatch.arrays._call's
 * memo (the router's: dispatch.routing.router.Router.memo), as `_memo_key` and `_memo_run` do: a
 * repeat of a call the router keeps on NumPy, decided and settled, runs NumPy's function without
 * asking again; an operator on a temporary NumPy would elide, into that temporary, where the memo
 * holds such an entry. An entry serves only at the router's epoch it was checked at (the router
 * bumps it whenever a decision changes or a region is recorded) and when the call is not due to be timed;
 * anything else hands the call to the Python path, which checks the entry again. What this reads
 * of the router it is handed at import (bind_router), never looked up by name.
 *
 * Besides the calls: the array type's operator and index slots, and dispatch.ufunc's call slot,
 * call the Fast callables directly (install_slots, install_call); the array's shape, dtype, ndim
 * and size read NumPy data's own (Attr); and the array type is freed by its own deallocation
 * (nd_dealloc). On a program of 4-9 us calls (k-means on 2,000 points) those took what dispatch
 * adds from 1.4 % to 1.1 % of the instructions NumPy runs; a dtype read from 1,100 instructions
 * more than NumPy's to 100, a dispatch.abs(x) from 1,200 to 900.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>
#if defined(__linux__) || defined(__APPLE__)
#include <dlfcn.h>
#endif

enum { FORWARD, REFLECTED, INPLACE, GETITEM, SETITEM, METHOD, VIEW, FUNCTION, LOCAL, ASARRAY, UFUNC, ARRAY_FUNCTION,
       ARRAY_UFUNC, TRANSFORM, ARRAY, COPY, SHAPED, RANGE, KINDS };
static const char *kind_names[KINDS] = {"forward", "reflected", "inplace", "getitem", "setitem", "method", "view",
                                        "function", "local", "asarray", "ufunc", "array_function", "array_ufunc",
                                        "transform", "array", "copy", "shaped", "range"};

#define MAX_ARGS 16  /* calls with more arguments take the Python path */
#define MAX_DEPTH 4  /* nested lists deeper than this too */

/* Set by setup(): dispatch.ndarray, where its _engine_array and _base slots are, STATE and its plain slot, wrap(). */
static PyTypeObject *nd_type;
static Py_ssize_t data_off = -1, base_off = -1;
static PyObject *state;
static Py_ssize_t plain_off = -1, host_only_off = -1;
static PyTypeObject *op_type;  /* dispatch.base.ops.Op: its floors and function are read from their slots */
static Py_ssize_t floor_off = -1, trip_off = -1, func_off = -1, blas_off = -1;
static PyObject *wrap_fn, *blas_ns, *perf_counter, *str_last;  /* blas_spin's namespace, where _last is */
static npy_intp elide_bytes;
/* A left operand's reference count at a temporary's call, measured at import through refs_seen()
 * (dispatch.arrays._array._measure_temporaries); -1 where not told: every large operand goes to Python. */
static Py_ssize_t temporary_refs = -1, refs_seen = -1;
static PyObject *str_floor, *str_trip, *str_func, *str_op, *str_out, *str_nin, *str_fields,
    *out_names;

/* Set by bind_router(): the router (whose memo and epoch are read from their slots at each call), the
 * Decision type and where its slots and Op's `mutates` are, how often a settled decision is timed,
 * the end of an elided operator's memo key, and the padding that unsizes a transform. Nothing is
 * looked up by name after that: a renamed slot fails bind_router() at import. */
static PyObject *router_obj, *into_marker;
static PyTypeObject *decision_type;
static Py_ssize_t mutates_off = -1, dsample_off = -1, dsettled_off = -1, dcalls_off = -1,
                  memo_off = -1, epoch_off = -1;
static long long settled_every = 0, fft_padded = 0;
static unsigned long long memo_hits = 0;  /* calls served from the memo here (memo_served()) */

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))  /* a __slots__ member at that offset */
#define DATA(o) SLOT(o, data_off)
#define BASE(o) SLOT(o, base_off)

static inline int plain(void) {
    return SLOT(state, plain_off) == Py_True;
}

/* Device copies of host data (dispatch.arrays.mirrors), told by set_mirrors(): while any is kept,
 * a write to memory that has (or had) copies takes the Python path, which invalidates them, and so
 * does every call that may write through out= or a function's own writes; host arrays of
 * mirror_min bytes or more that are handed out (numpy.asarray) or come in as NumPy arrays (asarray,
 * views) always do, so that dispatch knows them as the caller's. */
static int mirrors_live = 0;
static npy_intp mirror_min = NPY_MAX_INTP;
static PyObject *mirror_owners = NULL;  /* mirrors' write counters: id(memory's owner) -> its count */

/* The NumPy array owning the memory a NumPy array views (its last NumPy base; mirrors._owner). */
static PyObject *memory_owner(PyObject *a) {
    PyObject *base;
    while ((base = PyArray_BASE((PyArrayObject *)a)) != NULL && PyArray_Check(base)) a = base;
    return a;
}

/* Whether the memory a NumPy array views holds mirror_min bytes or more. */
static int large_memory(PyObject *a) {
    return PyArray_NBYTES((PyArrayObject *)memory_owner(a)) >= mirror_min;
}

/* Whether a write to host array a must take the Python path: its memory has (or had) device copies. */
static int writes_mirrored(PyObject *a) {
    PyObject *owner = memory_owner(a);
    if (PyArray_NBYTES((PyArrayObject *)owner) < mirror_min) return 0;  /* never mirrored */
    if (mirror_owners == NULL) return 1;
    PyObject *key = PyLong_FromVoidPtr(owner);  /* id(owner) */
    int found = key == NULL ? -1 : PyDict_Contains(mirror_owners, key);
    Py_XDECREF(key);
    if (found < 0) {
        PyErr_Clear();
        return 1;
    }
    return found;
}

static int large_numpy_arg(PyObject *const *args, Py_ssize_t nargs) {
    for (Py_ssize_t i = 0; i < nargs; i++)
        if (PyArray_CheckExact(args[i]) && large_memory(args[i])) return 1;
    return 0;
}

/* The host data of a dispatch array, or NULL (a device array, another type). */
static inline PyObject *host_data(PyObject *x) {
    if (Py_TYPE(x) != nd_type) return NULL;
    PyObject *d = DATA(x);
    return d != NULL && PyArray_CheckExact(d) ? d : NULL;
}

/* One of the op's floors (sizes at or under it run on NumPy), or -1 where not known here; every
 * size while NumPy is forced for the process (STATE.host_only: host_shortcut's first test). */
static npy_intp op_floor(PyObject *op, PyObject *which) {
    if (SLOT(state, host_only_off) == Py_True) return NPY_MAX_INTP;
    if (Py_TYPE(op) == op_type) {  /* the common case: no attribute lookup */
        PyObject *v = SLOT(op, which == str_floor ? floor_off : trip_off);
        if (v == NULL || !PyLong_CheckExact(v)) return -1;
        Py_ssize_t n = PyLong_AsSsize_t(v);
        if (n == -1 && PyErr_Occurred()) PyErr_Clear();
        return n;
    }
    PyObject *v = PyObject_GetAttr(op, which);
    if (v == NULL) {
        PyErr_Clear();
        return -1;
    }
    Py_ssize_t n = PyLong_AsSsize_t(v);
    Py_DECREF(v);
    if (n == -1 && PyErr_Occurred()) PyErr_Clear();
    return n;
}

/* What NumPy calls for an op (op.func): a new reference, or NULL with an error set. */
static PyObject *op_func(PyObject *op) {
    if (Py_TYPE(op) == op_type) {
        PyObject *f = SLOT(op, func_off);
        if (f != NULL) return Py_NewRef(f);
    }
    return PyObject_GetAttr(op, str_func);
}

/* An op NumPy hands to its BLAS ran under the floors: what blas_spin.ran() does, as every path
 * says it (its _last set to time.perf_counter(), with no Python frame). */
static int note_blas(PyObject *op) {
    if (Py_TYPE(op) != op_type || SLOT(op, blas_off) != Py_True) return 0;
    PyObject *now = PyObject_CallNoArgs(perf_counter);
    if (now == NULL) return -1;
    int failed = PyDict_SetItem(blas_ns, str_last, now);
    Py_DECREF(now);
    return failed;
}

/* dispatch.arrays._call.host_shortcut: host operands, the larger of n elements, run on NumPy: n at
 * most op.floor, or at most op.trip_floor. 0 where the floor is not computed yet (the Python path
 * computes it, and decides). */
static int takes(PyObject *op, npy_intp n) {
    npy_intp floor = op_floor(op, str_floor);
    if (floor < 0) return 0;  /* not computed yet: the Python path computes it */
    return n <= floor || n <= op_floor(op, str_trip);
}

static inline int py_scalar(PyObject *x) {
    PyTypeObject *t = Py_TYPE(x);
    return t == &PyFloat_Type || t == &PyLong_Type || t == &PyBool_Type || t == &PyComplex_Type;
}

/* An operator's other operand: its NumPy form (borrowed) and size, or NULL. */
static PyObject *operand(PyObject *x, npy_intp *size) {
    if (PyArray_CheckExact(x)) {
        *size = PyArray_SIZE((PyArrayObject *)x);
        return x;
    }
    if (py_scalar(x) || PyArray_IsScalar(x, Generic)) {
        *size = 1;
        return x;
    }
    PyObject *d = host_data(x);
    if (d != NULL) *size = PyArray_SIZE((PyArrayObject *)d);
    return d;
}

/* The elements of a and b broadcast together: an element-wise call's work (x[:, None] - y[None, :]
 * makes more than either holds); the larger size where they do not broadcast (NumPy raises). */
static npy_intp broadcast_size(PyArrayObject *a, PyArrayObject *b, npy_intp larger) {
    int na = PyArray_NDIM(a), nb = PyArray_NDIM(b), n = na > nb ? na : nb;
    npy_intp size = 1;
    for (int i = 1; i <= n; i++) {
        npy_intp x = i <= na ? PyArray_DIM(a, na - i) : 1, y = i <= nb ? PyArray_DIM(b, nb - i) : 1;
        if (x != y && x != 1 && y != 1) return larger;
        size *= x == 1 ? y : x;
    }
    return size;
}

/* A value passed to NumPy as it is: a flag, an axis, a name, a dtype, a scalar, a slice. */
static int passes(PyObject *v) {
    return v == Py_None || py_scalar(v) || PyArray_IsScalar(v, Generic) || PyUnicode_CheckExact(v) ||
           PySlice_Check(v) || v == Py_Ellipsis || PyType_Check(v) || PyArray_DescrCheck(v);
}

static inline int key_part(PyObject *k) {
    return PyLong_CheckExact(k) || PySlice_Check(k) || k == Py_None || k == Py_Ellipsis || PyArray_CheckExact(k);
}

/* An index key as the Python path's `_host_key` gives it to NumPy (host dispatch arrays
 * unwrapped): a new reference, or NULL with no error set for other keys (lists, device arrays). */
static PyObject *host_key(PyObject *key) {
    if (key_part(key)) return Py_NewRef(key);
    PyObject *d = host_data(key);
    if (d != NULL) return Py_NewRef(d);
    if (!PyTuple_CheckExact(key)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(key), wrapped = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyTuple_GET_ITEM(key, i);
        if (key_part(k)) continue;
        if (host_data(k) == NULL) return NULL;
        wrapped++;
    }
    if (!wrapped) return Py_NewRef(key);
    PyObject *out = PyTuple_New(n);
    if (out == NULL) {
        PyErr_Clear();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyTuple_GET_ITEM(key, i);
        PyObject *h = host_data(k);
        PyTuple_SET_ITEM(out, i, Py_NewRef(h != NULL ? h : k));
    }
    return out;
}

/* `v` as the Python path's `_small_on_host` gives it to NumPy (dispatch arrays unwrapped, lists
 * and tuples item by item): a new reference, or NULL with no error set where the router decides. */
static PyObject *host_value(PyObject *v, npy_intp floor, int depth) {
    if (PyArray_CheckExact(v)) {
        if (PyArray_SIZE((PyArrayObject *)v) > floor) return NULL;
        return Py_NewRef(v);
    }
    if (Py_TYPE(v) == nd_type) {
        PyObject *d = host_data(v);
        if (d == NULL || PyArray_SIZE((PyArrayObject *)d) > floor) return NULL;
        return Py_NewRef(d);
    }
    if (passes(v)) return Py_NewRef(v);
    int is_list = PyList_CheckExact(v);
    if (!(is_list || PyTuple_CheckExact(v)) || depth >= MAX_DEPTH) return NULL;
    Py_ssize_t n = Py_SIZE(v);
    PyObject *out = is_list ? PyList_New(n) : PyTuple_New(n);
    if (out == NULL) {
        PyErr_Clear();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = host_value(is_list ? PyList_GET_ITEM(v, i) : PyTuple_GET_ITEM(v, i), floor, depth + 1);
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        if (is_list) PyList_SET_ITEM(out, i, item);
        else PyTuple_SET_ITEM(out, i, item);
    }
    return out;
}

/* Arrays freed by nd_dealloc, kept for new_array to reuse (as CPython keeps floats and tuples,
 * and Cython its classes' objects): a loop of small calls makes and frees a wrapper at each call,
 * and the allocator's work was a third of what the wrapper costs. Untracked by the collector. */
#define FREE_ARRAYS 32
static PyObject *free_arrays[FREE_ARRAYS];
static int free_count = 0;

/* `object.__new__(dispatch.ndarray)` holding `data` (stolen): with no __dict__, what object.__new__
 * does is the type's allocation alone. */
static PyObject *new_array(PyObject *data) {
    PyObject *obj;
    if (free_count > 0) {
        obj = free_arrays[--free_count];
        memset((char *)obj + sizeof(PyObject), 0, nd_type->tp_basicsize - sizeof(PyObject));
        PyObject_Init(obj, nd_type);  /* its type (a reference to it: a heap type) and a count of 1 */
        PyObject_GC_Track(obj);
    } else if ((obj = nd_type->tp_alloc(nd_type, 0)) == NULL) {
        Py_DECREF(data);
        return NULL;
    }
    DATA(obj) = data;
    return obj;
}

/* Where the new array obj's data is a view of the memory of src (a dispatch array the call was
 * on), obj names src as its base (or src's own base, where NumPy's base of both is one owner) and
 * holds it, as NumPy's view holds its base: dispatch.arrays._array.viewed, for the Python path.
 * Whether it did. */
static int name_base(PyObject *obj, PyObject *src) {
    PyObject *owner = PyArray_BASE((PyArrayObject *)DATA(obj)), *d, *b;
    if (owner == NULL || Py_TYPE(src) != nd_type || (d = DATA(src)) == NULL) return 0;
    if (owner == d) b = src;
    else if (PyArray_CheckExact(d) && owner == PyArray_BASE((PyArrayObject *)d) && BASE(src) != NULL) b = BASE(src);
    else return 0;
    BASE(obj) = Py_NewRef(b);
    return 1;
}

/* dispatch.ndarray's deallocation, in place of CPython's generic one for classes (subtype_dealloc,
 * which walks the class's bases for slots to clear, a finalizer, a __del__ and a __dict__: a third
 * of what dispatch adds to an operator on a small array). The array type has none of those: its
 * slots are the weak reference list, _engine_array and _base, cleared here. A subclass keeps CPython's
 * deallocation, which clears the subclass's own slots and then calls this one. */
static void nd_dealloc(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (nd_type->tp_weaklistoffset <= 0 || SLOT(self, nd_type->tp_weaklistoffset) != NULL)
        PyObject_ClearWeakRefs(self);  /* (a list the interpreter keeps before the object: it looks itself) */
    Py_CLEAR(DATA(self));
    Py_CLEAR(BASE(self));
    if (type == nd_type && free_count < FREE_ARRAYS && type->tp_free == PyObject_GC_Del)
        free_arrays[free_count++] = self;  /* (a subclass's arrays are freed: their size differs) */
    else
        type->tp_free(self);
    Py_DECREF(type);  /* a heap type: each instance holds a reference to it */
}

/* Whether a class holds nothing to clear or run: no slots, __dict__, finalizer or __del__. */
static int stateless(PyTypeObject *t) {
#ifdef Py_TPFLAGS_MANAGED_DICT
    if (PyType_HasFeature(t, Py_TPFLAGS_MANAGED_DICT)) return 0;
#endif
    return t->tp_dictoffset == 0 && t->tp_weaklistoffset == 0 && t->tp_finalize == NULL && t->tp_del == NULL &&
           t->tp_itemsize == 0 && t->tp_basicsize == (Py_ssize_t)sizeof(PyObject);
}

/* Whether nd_dealloc covers the array type: slots only (no __dict__), those nd_dealloc clears, and
 * no finalizer or __del__ to run; its base is object, or a base of object that holds nothing
 * (box.Wrapper, the mark of dispatch's own arrays). */
static int lean_dealloc_fits(PyTypeObject *t) {
#ifdef Py_TPFLAGS_MANAGED_DICT
    if (PyType_HasFeature(t, Py_TPFLAGS_MANAGED_DICT)) return 0;
#endif
    Py_ssize_t own = t->tp_weaklistoffset > 0 ? 3 : 2;  /* weak list, _engine_array, _base */
    PyTypeObject *base = t->tp_base;
    return t->tp_dictoffset == 0 && t->tp_finalize == NULL && t->tp_del == NULL && t->tp_itemsize == 0 &&
           (base == &PyBaseObject_Type || (base->tp_base == &PyBaseObject_Type && stateless(base))) &&
           t->tp_basicsize == (Py_ssize_t)(sizeof(PyObject) + own * sizeof(PyObject *));
}

/* Whether wrap() of this tuple would wrap its arrays and keep the rest: a plain or a named tuple
 * (eigh's, lstsq's, slogdet's results) of arrays, scalars and None. */
static int plain_tuple(PyObject *r) {
    if (!PyTuple_CheckExact(r) && !(PyTuple_Check(r) && PyObject_HasAttr(r, str_fields))) return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(r); i++) {
        PyObject *x = PyTuple_GET_ITEM(r, i);
        if (!(PyArray_CheckExact(x) || py_scalar(x) || PyArray_IsScalar(x, Generic) || x == Py_None)) return 0;
    }
    return 1;
}

/* A plain_tuple with its arrays wrapped (the data of one of args: that argument), of the same type (r borrowed). */
static PyObject *wrap_tuple_of(PyObject *r, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t n = PyTuple_GET_SIZE(r);
    PyObject *items = PyTuple_New(n);
    if (items == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = Py_NewRef(PyTuple_GET_ITEM(r, i));
        if (PyArray_CheckExact(x)) {
            Py_ssize_t j = 0;
            while (j < nargs && !(Py_TYPE(args[j]) == nd_type && DATA(args[j]) == x)) j++;
            if (j < nargs) Py_SETREF(x, Py_NewRef(args[j]));  /* an argument's data: that argument (an out) */
            else if ((x = new_array(x)) == NULL) {
                Py_DECREF(items);
                return NULL;
            }
        }
        PyTuple_SET_ITEM(items, i, x);
    }
    if (PyTuple_CheckExact(r)) return items;
    PyObject *named = PyObject_Call((PyObject *)Py_TYPE(r), items, NULL);
    Py_DECREF(items);
    return named;
}

static PyObject *wrap_tuple(PyObject *r) { return wrap_tuple_of(r, NULL, 0); }

/* A NumPy result as the Python path returns it (stolen): arrays wrapped, scalars as they are,
 * tuples of them item by item, anything else (None, a list) through dispatch's wrap(). */
static PyObject *wrap_result(PyObject *r) {
    if (r == NULL) return NULL;
    if (PyArray_CheckExact(r)) return new_array(r);
    if (py_scalar(r) || PyArray_IsScalar(r, Generic)) return r;
    if (plain_tuple(r)) {
        PyObject *t = wrap_tuple(r);
        Py_DECREF(r);
        return t;
    }
    PyObject *w = PyObject_CallOneArg(wrap_fn, r);
    Py_DECREF(r);
    return w;
}

/* A NumPy result of a call on args (stolen), wrapped as wrap_result does; a view of an argument's
 * memory names that argument (name_base), as NumPy's frombuffer(a) or transpose(a) names a. */
static PyObject *wrap_made(PyObject *r, PyObject *const *args, Py_ssize_t nargs) {
    if (r == NULL || !PyArray_CheckExact(r)) return wrap_result(r);
    PyObject *obj = new_array(r);
    if (obj != NULL && PyArray_BASE((PyArrayObject *)r) != NULL)
        for (Py_ssize_t i = 0; i < nargs && !name_base(obj, args[i]); i++) {}
    return obj;
}

/* A NumPy result of a call on args (stolen), as the Python path returns it: where NumPy handed
 * back an argument's data as it is (a view with nothing to do), that dispatch array itself. */
static PyObject *wrap_handed(PyObject *r, PyObject *const *args, Py_ssize_t nargs) {
    if (r != NULL && PyArray_CheckExact(r)) {
        for (Py_ssize_t i = 0; i < nargs; i++) {
            if (Py_TYPE(args[i]) == nd_type && DATA(args[i]) == r) {
                Py_DECREF(r);
                return Py_NewRef(args[i]);
            }
        }
    } else if (r != NULL && plain_tuple(r)) {  /* frexp(x, o1, o2): its outs come back themselves */
        PyObject *t = wrap_tuple_of(r, args, nargs);
        Py_DECREF(r);
        return t;
    }
    return wrap_made(r, args, nargs);
}

/* A method's result (stolen): where NumPy handed back an argument after the array as it is (an out
 * given by position, NumPy's array or a dispatch array), that argument itself, as NumPy's method
 * returns its out; else as wrap_handed. */
static PyObject *wrap_method(PyObject *r, PyObject *const *args, Py_ssize_t nargs) {
    for (Py_ssize_t i = 1; i < nargs && r != NULL; i++)
        if (args[i] == r) return r;
    return wrap_handed(r, args, nargs);
}

/* One argument's part of `_memo_key`'s key (a keyword's with its name): a new reference, or NULL
 * with no error set where the memo does not serve it (a device array, a NumPy array not wrapped,
 * an array in a keyword, a list...). */
static PyObject *array_part(PyObject *v) {
    PyObject *d = host_data(v);
    if (d == NULL) return NULL;
    PyArrayObject *a = (PyArrayObject *)d;
    PyObject *shape = PyArray_IntTupleFromIntp(PyArray_NDIM(a), PyArray_DIMS(a));
    if (shape == NULL) return NULL;
    PyObject *part = PyTuple_Pack(3, (PyObject *)&PyArray_Type, (PyObject *)PyArray_DESCR(a), shape);
    Py_DECREF(shape);
    return part;
}

static PyObject *memo_part(PyObject *v, PyObject *name) {
    PyTypeObject *t = Py_TYPE(v);
    PyObject *part = NULL;
    if (t == nd_type) {
        if (name != NULL) return NULL;
        part = array_part(v);
    } else if (name == NULL && (t == &PyList_Type || t == &PyTuple_Type) && Py_SIZE(v) > 0 && Py_SIZE(v) <= MAX_ARGS) {
        /* concatenate([a, b]): the sequence's type and each array's part */
        Py_ssize_t n = Py_SIZE(v);
        PyObject *items = PyTuple_New(n);
        if (items == NULL) {
            PyErr_Clear();
            return NULL;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = t == &PyList_Type ? PyList_GET_ITEM(v, i) : PyTuple_GET_ITEM(v, i);
            PyObject *ip = Py_TYPE(item) == nd_type ? array_part(item) : NULL;
            if (ip == NULL) {
                Py_DECREF(items);
                PyErr_Clear();
                return NULL;
            }
            PyTuple_SET_ITEM(items, i, ip);
        }
        part = PyTuple_Pack(2, (PyObject *)t, items);
        Py_DECREF(items);
    } else if (t == &PyFloat_Type || t == &PyComplex_Type ||
               (name == NULL && (PyArray_IsScalar(v, Floating) || PyArray_IsScalar(v, ComplexFloating)))) {
        /* a float's value is not in the key; a NumPy scalar counts as one where it is an operand */
        part = name == NULL ? Py_NewRef((PyObject *)t) : PyTuple_Pack(2, name, (PyObject *)t);
    } else if (t == &PyLong_Type || t == &PyBool_Type || v == Py_None) {
        part = name == NULL ? PyTuple_Pack(2, (PyObject *)t, v) : PyTuple_Pack(3, name, (PyObject *)t, v);
    } else if (name != NULL && t == &PyTuple_Type) {  /* axes, a shape */
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v); i++)
            if (!PyLong_CheckExact(PyTuple_GET_ITEM(v, i))) return NULL;
        part = PyTuple_Pack(3, name, (PyObject *)t, v);
    }
    if (part == NULL) PyErr_Clear();
    return part;
}

/* `_memo_key(op, args, kwargs)` with no target forced: a new reference, or NULL with no error set. */
static PyObject *memo_key(PyObject *op, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject *tail) {
    if (Py_TYPE(op) != op_type || SLOT(op, mutates_off) != Py_None) return NULL;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    PyObject *key = PyTuple_New(2 + nargs + nkw + (tail != NULL));
    if (key == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyTuple_SET_ITEM(key, 0, Py_NewRef(op));
    PyTuple_SET_ITEM(key, 1, Py_NewRef(Py_None));
    for (Py_ssize_t i = 0; i < nargs + nkw; i++) {
        PyObject *part = memo_part(args[i], i < nargs ? NULL : PyTuple_GET_ITEM(kwnames, i - nargs));
        if (part == NULL) {
            Py_DECREF(key);
            return NULL;
        }
        PyTuple_SET_ITEM(key, 2 + i, part);
    }
    if (tail != NULL) PyTuple_SET_ITEM(key, 2 + nargs + nkw, Py_NewRef(tail));
    return key;
}

/* Whether `_memo_run` would run this memo entry on NumPy now: a host entry made at the router's
 * epoch (no decision changed and no region's recording started since it was checked:
 *   dispatch.routing.router.Router.epoch),
 * and (for a decision that learns) settled and not this call's turn to be timed, counted as
 * `_memo_run` counts it. At another epoch the Python path checks the entry again. */
static int memo_serves(PyObject *entry) {
    if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 4 || PyTuple_GET_ITEM(entry, 1) != Py_None)
        return 0;
    PyObject *decision = PyTuple_GET_ITEM(entry, 0), *made = PyTuple_GET_ITEM(entry, 3);
    PyObject *epoch = SLOT(router_obj, epoch_off);
    if (Py_TYPE(decision) != decision_type || epoch == NULL) return 0;
    if (made != epoch) {  /* (the same int object until the router bumps it) */
        if (!PyLong_CheckExact(made) || !PyLong_CheckExact(epoch)) return 0;
        int overflow = 0;
        long long a = PyLong_AsLongLongAndOverflow(made, &overflow), b = PyLong_AsLongLongAndOverflow(epoch, &overflow);
        if (overflow || a != b || (a == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
    }
    PyObject *sample = SLOT(decision, dsample_off);
    if (sample == NULL || (sample != Py_False && PyObject_IsTrue(sample) != 0)) {
        PyObject *settled = SLOT(decision, dsettled_off), *calls = SLOT(decision, dcalls_off);
        if (sample == NULL || settled == NULL || calls == NULL || PyObject_IsTrue(settled) != 1) return 0;
        long long n = PyLong_AsLongLong(calls);
        if (n < 0 || settled_every <= 0 || (n + 1) % settled_every == 0) {
            PyErr_Clear();
            return 0;
        }
        PyObject *next = PyLong_FromLongLong(n + 1);
        if (next == NULL) return 0;
        Py_SETREF(SLOT(decision, dcalls_off), next);
    }
    return 1;
}

/* A memo argument as NumPy takes it (a new reference, or NULL with an error set): a host array's
 * data; a list or tuple of them, of their data (memo_part took no other sequence). */
static PyObject *memo_native(PyObject *v) {
    if (Py_TYPE(v) == nd_type) return Py_NewRef(DATA(v));
    int is_list = PyList_CheckExact(v);
    if (!is_list && !PyTuple_CheckExact(v)) return Py_NewRef(v);
    Py_ssize_t n = Py_SIZE(v);
    PyObject *out = is_list ? PyList_New(n) : PyTuple_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = is_list ? PyList_GET_ITEM(v, i) : PyTuple_GET_ITEM(v, i);
        item = Py_NewRef(Py_TYPE(item) == nd_type ? DATA(item) : item);
        if (is_list) PyList_SET_ITEM(out, i, item);
        else PyTuple_SET_ITEM(out, i, item);
    }
    return out;
}

/* `op` on these arguments (as the Python path passes them to dispatch.arrays._call.call) from the memo:
 * NULL with *taken 0 and no error set where the Python path runs it. `into`: a host temporary
 * NumPy's elision writes the result into (`call`'s), whose entry's key ends with `_INTO`. */
static PyObject *memo_run(PyObject *op, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject *into,
                          int *taken) {
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    /* (keyed with no target forced: never while NumPy is, STATE.host_only) */
    if (router_obj == NULL || nargs + nkw + 1 > MAX_ARGS || (into != NULL && nkw) || SLOT(state, host_only_off) == Py_True)
        return NULL;
    PyObject *key = memo_key(op, args, nargs, kwnames, into != NULL ? into_marker : NULL);
    if (key == NULL) return NULL;
    PyObject *memo = SLOT(router_obj, memo_off), *entry = NULL;
    if (memo != NULL && PyDict_CheckExact(memo)) entry = PyDict_GetItemWithError(memo, key);
    Py_DECREF(key);
    if (entry == NULL || !memo_serves(Py_NewRef(entry))) {
        Py_XDECREF(entry);
        PyErr_Clear();
        return NULL;
    }
    PyObject *run = Py_NewRef(PyTuple_GET_ITEM(entry, 2)), *hosted[MAX_ARGS];
    int on_numpy = PyTuple_GET_ITEM(entry, 1) == Py_None;  /* a host entry: NumPy's function itself */
    Py_DECREF(entry);
    if (on_numpy && note_blas(op) < 0) {  /* (as _memo_run notes it) */
        Py_DECREF(run);
        *taken = 1;
        return NULL;
    }
    memo_hits++;
    Py_ssize_t made = 0;
    for (; made < nargs + nkw; made++) {  /* (memo_key took host arrays alone, and lists of them) */
        if ((hosted[made] = memo_native(args[made])) == NULL) break;
    }
    *taken = 1;
    PyObject *r = NULL;
    if (made == nargs + nkw) {
        if (into != NULL) {
            hosted[nargs] = DATA(into);
            r = PyObject_Vectorcall(run, hosted, nargs, out_names);
        } else {
            r = PyObject_Vectorcall(run, hosted, nargs, kwnames);
        }
    }
    for (Py_ssize_t i = 0; i < made; i++) Py_DECREF(hosted[i]);
    Py_DECREF(run);
    if (into != NULL) {
        if (r == NULL) return NULL;
        Py_DECREF(r);
        return Py_NewRef(into);
    }
    return wrap_handed(r, args, nargs);
}

/* dispatch.arrays._call.fft_sized for a 1-D transform of host data: 1 where its work follows its input's
 * size, 0 where `n` pads the input's length along `axis` FFT_PADDED times or more, -1 where the
 * Python path decides (data on a device, no FFT_PADDED). */
static int transform_sized(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    if (nargs < 1) return 1;
    PyObject *n = nargs > 1 ? args[1] : Py_None, *axis = nargs > 2 ? args[2] : NULL, *a = args[0];
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        if (PyUnicode_CompareWithASCIIString(name, "n") == 0) n = args[nargs + i];
        else if (PyUnicode_CompareWithASCIIString(name, "axis") == 0) axis = args[nargs + i];
    }
    if (Py_TYPE(a) == nd_type && (a = host_data(a)) == NULL) return -1;
    if (!PyArray_CheckExact(a) || !PyLong_CheckExact(n) || (axis != NULL && !PyLong_CheckExact(axis))) return 1;
    if (fft_padded <= 0) return -1;
    int ndim = PyArray_NDIM((PyArrayObject *)a);
    long ax = axis == NULL ? -1 : PyLong_AsLong(axis);
    long long points = PyLong_AsLongLong(n), times = fft_padded;
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    if (ax < -ndim || ax >= ndim) return 1;  /* (NumPy raises) */
    long long length = PyArray_DIM((PyArrayObject *)a, ax < 0 ? ax + ndim : ax);
    return points < times * length;
}

/* Whether NumPy's result of ufunc `func` on d and od (d first with data_first) has d's dtype and
 * shape, as dispatch.arrays._array._elides asks: 1 or 0, with no error set. The dtypes' answer is kept
 * per (func, d's dtype, od's dtype or type, order): resolving them costs more than the call. */
static PyObject *elision_cache, *str_resolve_dtypes;
static PyArray_Descr *bool_descr;

static int elision_keeps(PyObject *func, PyArrayObject *d, PyObject *od, int data_first) {
    PyObject *other;
    if (PyArray_CheckExact(od)) {
        PyArrayObject *o = (PyArrayObject *)od;
        int nd = PyArray_NDIM(d), no = PyArray_NDIM(o);
        if (no > nd) return 0;
        for (int i = 1; i <= no; i++) {  /* broadcast to d's shape, not past it */
            npy_intp a = PyArray_DIM(d, nd - i), b = PyArray_DIM(o, no - i);
            if (b != a && b != 1) return 0;
        }
        other = (PyObject *)PyArray_DESCR(o);
    } else {  /* a scalar: Python's bool is not weak (NEP 50), so it counts as NumPy's bool */
        other = Py_TYPE(od) == &PyBool_Type ? (PyObject *)bool_descr : (PyObject *)Py_TYPE(od);
    }
    PyObject *descr = (PyObject *)PyArray_DESCR(d);
    PyObject *key = PyTuple_Pack(4, func, descr, other, data_first ? Py_True : Py_False);
    if (key == NULL) {
        PyErr_Clear();
        return 0;
    }
    PyObject *known = PyDict_GetItemWithError(elision_cache, key);
    if (known != NULL) {
        Py_DECREF(key);
        return known == Py_True;
    }
    PyObject *types = data_first ? PyTuple_Pack(3, descr, other, Py_None) : PyTuple_Pack(3, other, descr, Py_None);
    PyObject *resolved = types == NULL ? NULL : PyObject_CallMethodOneArg(func, str_resolve_dtypes, types);
    Py_XDECREF(types);
    int keeps = resolved != NULL && PyTuple_Check(resolved) && PyTuple_GET_SIZE(resolved) == 3 &&
                PyObject_RichCompareBool(PyTuple_GET_ITEM(resolved, 2), descr, Py_EQ) == 1;
    Py_XDECREF(resolved);
    PyErr_Clear();  /* no loop for these dtypes: the call raises NumPy's error itself */
    if (PyDict_GET_SIZE(elision_cache) >= 1024) PyDict_Clear(elision_cache);
    if (PyDict_SetItem(elision_cache, key, keeps ? Py_True : Py_False) < 0) PyErr_Clear();
    Py_DECREF(key);
    return keeps;
}

/* Whether the operator running now was called by the interpreter on its operand, rather than
 * by NumPy's C code holding the operand through a borrowed reference: NumPy's loop over an object
 * array calls `element + 1.0` for each element, which then shows a temporary's reference count
 * though the array still holds it (writing into it would change the user's data). As NumPy's own
 * elision does (temp_elide.c), read the C stack: no frame in NumPy's extension among its first
 * STACK_FRAMES (NumPy's loop lies 5 to 10 frames down; this costs some 10 µs, paid where an
 * operand of 256 KiB or more would be written into). Where the stack cannot be read (neither
 * Linux nor macOS), nothing counts as a temporary. */
#define STACK_FRAMES 14
#ifdef __linux__
#include <execinfo.h>
#include <link.h>
#define CODE_RANGES 8
typedef struct {
    uintptr_t at;                   /* an address inside the object looked for */
    uintptr_t code[CODE_RANGES][2]; /* its executable segments: [start, end) */
    int n;                          /* how many; -1: not found (yet) */
} Code;
static Code numpy_code = {0, {{0}}, -1};  /* NumPy's extension */

static int find_code(struct dl_phdr_info *info, size_t size, void *data) {
    Code *c = (Code *)data;
    int holds = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && c->at >= lo && c->at < lo + ph->p_memsz) holds = 1;
    }
    if (!holds) return 0;
    c->n = 0;
    for (int i = 0; i < info->dlpi_phnum && c->n < CODE_RANGES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        c->code[c->n][0] = info->dlpi_addr + ph->p_vaddr;
        c->code[c->n][1] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        c->n++;
    }
    return 1;
}

static int in_code(const Code *c, uintptr_t at) {
    for (int r = 0; r < c->n; r++)
        if (at >= c->code[r][0] && at < c->code[r][1]) return 1;
    return 0;
}
#elif defined(__APPLE__)
#include <execinfo.h>
static const void *numpy_base = NULL;  /* where NumPy's extension is loaded */
#endif

static int from_interpreter(void) {
#ifdef __APPLE__
    Dl_info info;
    if (numpy_base == NULL) {
        if (!dladdr((const void *)&PyArray_Type, &info) || info.dli_fbase == NULL) return 0;
        numpy_base = info.dli_fbase;
    }
    void *frames[STACK_FRAMES];
    int n = backtrace(frames, STACK_FRAMES);
    for (int i = 1; i < n; i++)
        if (dladdr(frames[i], &info) && info.dli_fbase == numpy_base) return 0;
    return n > 0;
#elif defined(__linux__)
    if (numpy_code.n < 0) {  /* (once: the object that holds NumPy's array type) */
        numpy_code.at = (uintptr_t)&PyArray_Type;
        dl_iterate_phdr(find_code, &numpy_code);
    }
    if (numpy_code.n <= 0) return 0;
    void *frames[STACK_FRAMES];
    int n = backtrace(frames, STACK_FRAMES);
    for (int i = 1; i < n; i++)
        if (in_code(&numpy_code, (uintptr_t)frames[i])) return 0;
    return n > 0;
#else
    return 0;
#endif
}

/* Whether the compiled operator running now was called by the interpreter's own loop, with
 * nothing but Python's C code between them: a C extension that calls PyNumber_Add on an operand
 * it holds through a borrowed reference (a list's item: `l[4] + l[4]`) shows a temporary's
 * reference count too, and writing into it would change the user's data. NumPy's elision asks
 * the same (temp_elide.c: every frame up to the interpreter's loop in Python or NumPy). Where the
 * stack or the loop's address cannot be read, nothing counts as a temporary. (The Python path
 * needs only from_interpreter: there a Python caller's frame holds its own reference.) */
#define EVAL_LOOP "_PyEval_EvalFrameDefault"
#if defined(__linux__) && defined(__GLIBC__)  /* (dladdr1, a symbol's size: glibc's) */
static Code own_code = {0, {{0}}, -1}, python_code = {0, {{0}}, -1};
static uintptr_t eval_loop[2];      /* the interpreter loop's code: [start, end) */
static int looked_up = 0;           /* 1: found; -1: not found (no elision) */

static int interpreter_called(void);

static int look_up_callers(void) {
    own_code.at = (uintptr_t)&interpreter_called;
    python_code.at = (uintptr_t)&PyNumber_Add;
    dl_iterate_phdr(find_code, &own_code);
    dl_iterate_phdr(find_code, &python_code);
    void *loop = dlsym(RTLD_DEFAULT, EVAL_LOOP);
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (own_code.n <= 0 || python_code.n <= 0 || loop == NULL ||
        !dladdr1(loop, &info, (void **)&sym, RTLD_DL_SYMENT) || sym == NULL || sym->st_size == 0)
        return -1;
    eval_loop[0] = (uintptr_t)loop;
    eval_loop[1] = (uintptr_t)loop + sym->st_size;
    return 1;
}

static int interpreter_called(void) {
    if (looked_up == 0) looked_up = look_up_callers();
    if (looked_up < 0) return 0;
    void *frames[STACK_FRAMES];
    int n = backtrace(frames, STACK_FRAMES);
    for (int i = 1; i < n; i++) {
        uintptr_t at = (uintptr_t)frames[i];
        if (at >= eval_loop[0] && at < eval_loop[1]) return 1;
        if (!in_code(&python_code, at) && !in_code(&own_code, at)) return 0;  /* NumPy's, an extension's */
    }
    return 0;
}
#elif defined(__APPLE__)
static int interpreter_called(void) {
    Dl_info info;
    if (!dladdr((const void *)&PyNumber_Add, &info) || info.dli_fbase == NULL) return 0;
    const void *python = info.dli_fbase;
    if (!dladdr((const void *)&interpreter_called, &info) || info.dli_fbase == NULL) return 0;
    const void *own = info.dli_fbase;
    void *frames[STACK_FRAMES];
    int n = backtrace(frames, STACK_FRAMES);
    for (int i = 1; i < n; i++) {
        if (!dladdr(frames[i], &info)) return 0;
        if (info.dli_fbase == own) continue;
        if (info.dli_fbase != python) return 0;
        if (info.dli_sname != NULL && strcmp(info.dli_sname, EVAL_LOOP) == 0) return 1;
    }
    return 0;
}
#else
static int interpreter_called(void) { return 0; }
#endif

/* Whether `wrapper`, a dispatch array holding host data `d`, may be a temporary NumPy would compute
 * into: large memory it owns and alone holds, the wrapper held no more than a temporary is (any,
 * while no count is told). Such an operand goes to the Python path, which decides by the count
 * _array measured for its place. */
static int may_be_temporary(PyObject *wrapper, PyObject *d) {
    return d != NULL && PyArray_Check(d) && Py_REFCNT(d) == 1 && PyArray_NBYTES((PyArrayObject *)d) >= elide_bytes
           && PyArray_BASE((PyArrayObject *)d) == NULL && (temporary_refs < 0 || Py_REFCNT(wrapper) <= temporary_refs);
}

typedef struct {
    PyObject_HEAD
    int kind;
    int elides;          /* NumPy may elide into an operand: a ufunc of one output, no core dimensions */
    int also_elides;     /* NumPy's operator also elides into an operand not checked here: a forward operator's
                          * right one (+ * & | ^), a unary operator's own (- + abs ~); set by also_elides() */
    int ufunc;           /* func is a ufunc (its dtypes resolved by resolve_dtypes) */
    PyObject *op;        /* dispatch.base.ops.Op (None where the call brings it: ufunc, array_function...) */
    PyObject *func;      /* what NumPy calls (op.func, an ndarray method), or the protocol methods' table */
    PyObject *fallback;  /* the Python function this stands in for */
    PyObject *dict;      /* __name__, __doc__, __wrapped__... */
    vectorcallfunc vectorcall;
} Fast;

/* Call func on the host forms of args[0:nargs] and the keyword values (arrays under `floor`); NULL
 * with no error set where any is not the fast path's. */
static PyObject *call_hosted(PyObject *func, npy_intp floor, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames, int *taken) {
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs + nkw > MAX_ARGS) return NULL;
    for (Py_ssize_t i = 0; i < nkw; i++) {  /* keywords: plain values, and no out= array */
        PyObject *v = args[nargs + i];
        if (!passes(v)) return NULL;
    }
    PyObject *hosted[MAX_ARGS];
    Py_ssize_t made = 0;
    for (; made < nargs; made++) {
        hosted[made] = host_value(args[made], floor, 0);
        if (hosted[made] == NULL) break;
    }
    PyObject *result = NULL;
    if (made == nargs) {
        for (Py_ssize_t i = 0; i < nkw; i++) hosted[nargs + i] = args[nargs + i];
        *taken = 1;
        result = PyObject_Vectorcall(func, hosted, nargs, kwnames);
    }
    for (Py_ssize_t i = 0; i < made; i++) Py_DECREF(hosted[i]);
    return result;
}

/* Whether v names NumPy's object dtype (object, "O", "object", np.dtype(object)). */
static int is_object_dtype(PyObject *v) {
    if (v == (PyObject *)&PyBaseObject_Type) return 1;
    if (PyArray_DescrCheck(v)) return ((PyArray_Descr *)v)->type_num == NPY_OBJECT;
    return PyUnicode_CheckExact(v) &&
           (PyUnicode_CompareWithASCIIString(v, "O") == 0 || PyUnicode_CompareWithASCIIString(v, "object") == 0);
}

/* Whether a call asks for the object dtype (its second argument or dtype=): an object array made
 * of a list holds the dispatch arrays in it themselves, as NumPy's holds the arrays given, so
 * the Python path makes it (dispatch._namespace). */
static int asks_object(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < nkw; i++)
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "dtype") == 0)
            return is_object_dtype(args[nargs + i]);
    return nargs > 1 && is_object_dtype(args[1]);
}

/* `op` on these arguments where the host shortcut takes them (dispatch.arrays._call.host_shortcut,
 * as under_floors applies it to a call's arguments): at most op.floor elements, or at most
 * op.trip_floor. */
static PyObject *run_op(PyObject *op, PyObject *func, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                        int *taken) {
    npy_intp floor = op_floor(op, str_floor), trip;
    if (floor < 0) return NULL;  /* not computed yet: the Python path computes it */
    PyObject *r = call_hosted(func, floor, args, nargs, kwnames, taken);
    if (!*taken && (trip = op_floor(op, str_trip)) > floor)
        r = call_hosted(func, trip, args, nargs, kwnames, taken);
    if (*taken && r != NULL && note_blas(op) < 0) Py_CLEAR(r);
    return r;
}

/* The op of a NumPy function or ufunc in `table`, with what NumPy calls for it (new references),
 * or 0 with no error set. */
static PyObject *last_table, *last_key, *last_op;  /* the last lookup's table, key and op (strong references) */

static int table_op(PyObject *table, PyObject *key, PyObject **op, PyObject **func) {
    if (key == last_key && table == last_table) {  /* a loop calls the same function: no hashing */
        *op = last_op;
    } else {
        *op = PyDict_GetItemWithError(table, key);
        if (*op == NULL) {
            PyErr_Clear();
            return 0;
        }
        Py_INCREF(table);
        Py_INCREF(key);
        Py_INCREF(*op);
        Py_XSETREF(last_table, table);
        Py_XSETREF(last_key, key);
        Py_XSETREF(last_op, *op);
    }
    if ((*func = op_func(*op)) == NULL) {
        PyErr_Clear();
        return 0;
    }
    Py_INCREF(*op);
    return 1;
}

/* Whether `name` is "__call__" (NumPy's protocol passes a new string at each call: its length
 * and bytes are compared, with no decoding). */
static int is_call(PyObject *name) {
    return PyUnicode_CheckExact(name) && PyUnicode_GET_LENGTH(name) == 8 && PyUnicode_KIND(name) == PyUnicode_1BYTE_KIND &&
           memcmp(PyUnicode_DATA(name), "__call__", 8) == 0;
}

/* Set by setup_creation(): dispatch.cluster's namespace, where LIVE_ELEMENTS is (read at each call:
 * it follows the chunk size). */
static PyObject *cluster_ns, *str_live;

/* The element count of a creation call of these arguments (SHAPED: the shape first; RANGE: arange's
 * integers), or -1 where the Python wrapper counts it: other arguments, or a keyword that sizes it. */
static long long created(int kind, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs < 1 || nargs > (kind == RANGE ? 3 : MAX_ARGS)) return -1;
    for (Py_ssize_t i = 0; i < nkw; i++) {  /* dtype= and order=: plain values that leave the size */
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        if (!passes(args[nargs + i]) || (PyUnicode_CompareWithASCIIString(name, "dtype") != 0 &&
                                         PyUnicode_CompareWithASCIIString(name, "order") != 0))
            return -1;
    }
    long long n = 1, v[3] = {0, 0, 1};
    int overflow = 0;
    if (kind == SHAPED) {
        PyObject *shape = args[0];
        Py_ssize_t dims = PyTuple_CheckExact(shape) ? PyTuple_GET_SIZE(shape) : 1;
        for (Py_ssize_t i = 0; i < dims; i++) {
            PyObject *d = PyTuple_CheckExact(shape) ? PyTuple_GET_ITEM(shape, i) : shape;
            long long k = PyLong_CheckExact(d) ? PyLong_AsLongLongAndOverflow(d, &overflow) : -1;
            if (k < 0 || overflow || (k > 0 && n > LLONG_MAX / k)) return -1;  /* NumPy's error, from Python */
            n *= k;
        }
        for (Py_ssize_t i = 1; i < nargs; i++)  /* full's value, a dtype, an order */
            if (!passes(args[i])) return -1;
        return n;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        if (!PyLong_CheckExact(args[i])) return -1;
        v[nargs == 1 ? 1 : i] = PyLong_AsLongLongAndOverflow(args[i], &overflow);
        if (overflow || (v[nargs == 1 ? 1 : i] == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return -1;
        }
    }
    long long start = v[0], stop = v[1], step = v[2];
    if (step == 0 || stop / 2 - start / 2 > LLONG_MAX / 4 || start / 2 - stop / 2 > LLONG_MAX / 4) return -1;
    long long span = stop - start;  /* ceil(span / step), at least 0 */
    n = span / step + (span % step != 0 && (span > 0) == (step > 0));
    return n > 0 ? n : 0;
}

/* Set by install_call(): dispatch.ufunc, where its _op slot is, and its Fast __call__. */
static PyTypeObject *ufunc_type;
static Py_ssize_t ufunc_op_off;
static PyObject *ufunc_call;

/* A dispatch.ufunc's op (a new reference): from its slot, or by name where its type is another. */
static PyObject *ufunc_op(PyObject *proxy) {
    if (Py_TYPE(proxy) == ufunc_type && SLOT(proxy, ufunc_op_off) != NULL) return Py_NewRef(SLOT(proxy, ufunc_op_off));
    return PyObject_GetAttr(proxy, str_op);
}

static PyObject *fast_call(Fast *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (mirrors_live) {  /* (mirrors) calls that may write mirrored host data: the Python path sees the write */
        switch (self->kind) {
        case FUNCTION: case ARRAY_FUNCTION: goto fall_back;  /* (out=, or a function that writes: copyto, put...) */
        case UFUNC: case ARRAY_UFUNC: if (kwnames != NULL) goto fall_back; break;  /* (out= by name; by position: below) */
        case INPLACE: case SETITEM: {  /* (the array written: its memory's copies) */
            PyObject *written = nargs < 1 ? NULL : host_data(args[0]);
            if (written == NULL || writes_mirrored(written)) goto fall_back;
            break;
        }
        default: break;
        }
    }
    switch (self->kind) {
    case FORWARD:
    case REFLECTED:
    case INPLACE: {
        if (nargs != 2 || kwnames != NULL || !plain()) break;
        PyObject *d = host_data(args[0]), *o = args[1];
        if (d == NULL) break;
        npy_intp n = PyArray_SIZE((PyArrayObject *)d), on;
        PyObject *od;
        if (self->kind == REFLECTED) {
            if (!py_scalar(o)) break;
            od = o;
            on = 1;
        } else if ((od = operand(o, &on)) == NULL) {
            break;
        }
        if (on > n) n = on;
        if (self->kind == FORWARD && PyArray_Check(od))
            n = broadcast_size((PyArrayObject *)d, (PyArrayObject *)od, n);
        int under = takes(self->op, n);
        if (!under && self->kind == INPLACE) break;
        if (under && note_blas(self->op) < 0) return NULL;
        if (self->kind == INPLACE) {
            PyObject *call_args[3] = {d, od, d};
            PyObject *r = PyObject_Vectorcall(self->func, call_args, 2, out_names);
            if (r == NULL) return NULL;
            Py_DECREF(r);
            return Py_NewRef(args[0]);
        }
        /* NumPy writes into a temporary operand it owns (never a view, nor for matmul: _array._elides) */
        PyArrayObject *da = (PyArrayObject *)d;
        PyObject *into = NULL;
        int reflected = self->kind == REFLECTED;
        PyObject *call_args[3] = {reflected ? od : d, reflected ? d : od, d};  /* (out=d where elided) */
        if (self->elides && PyArray_NBYTES(da) >= elide_bytes && PyArray_BASE(da) == NULL) {
            refs_seen = Py_REFCNT(args[0]);
            if (temporary_refs < 0 || refs_seen < temporary_refs) break;
            /* a temporary (a named operand is held more): with its data held by it alone, over
             * the floors the memo's entry for NumPy's elision into it (its key, of these dtypes
             * and shapes, is only made where _elides allowed it); under them, NumPy's call into
             * it where the result keeps its dtype and shape (as _elides checks) */
            if (refs_seen == temporary_refs) {
                if (Py_REFCNT(d) != 1 || !PyArray_ISWRITEABLE(da) || !interpreter_called()) break;
                if (!under) {
                    into = args[0];
                } else {
                    if (!self->ufunc || !elision_keeps(self->func, da, od, !reflected)) break;
                    PyObject *r = PyObject_Vectorcall(self->func, call_args, 2, out_names);
                    if (r == NULL) return NULL;
                    Py_DECREF(r);
                    return Py_NewRef(args[0]);
                }
            }
        }
        /* a temporary right operand NumPy's commutative operator may write into (a + b * c) */
        if (into == NULL && self->also_elides && Py_TYPE(o) == nd_type && may_be_temporary(o, od)) break;
        if (!under) {  /* the operands as the Python path passes them on */
            PyObject *operands[2] = {reflected ? o : args[0], reflected ? args[0] : o};
            int taken = 0;
            PyObject *r = memo_run(self->op, operands, 2, NULL, into, &taken);
            if (taken) return r;
            break;
        }
        return wrap_result(PyObject_Vectorcall(self->func, call_args, 2, NULL));
    }
    case GETITEM: {
        if (nargs != 2 || kwnames != NULL || !plain()) break;
        PyObject *d = host_data(args[0]), *key;
        if (d == NULL || (key = host_key(args[1])) == NULL) break;
        PyObject *r = PyObject_GetItem(d, key);
        Py_DECREF(key);
        if (r == NULL || !PyArray_CheckExact(r)) return r;
        return wrap_made(r, args, 1);
    }
    case SETITEM: {
        if (nargs != 3 || kwnames != NULL) break;
        PyObject *d = host_data(args[0]), *v = args[2], *key;
        if (d == NULL) break;
        if (Py_TYPE(v) == nd_type) {  /* (an object array holds the dispatch array itself: the Python path) */
            if (PyArray_DESCR((PyArrayObject *)d)->type_num == NPY_OBJECT || (v = host_data(v)) == NULL) break;
        } else if (!(PyArray_CheckExact(v) || py_scalar(v) || PyArray_IsScalar(v, Generic))) {
            break;
        }
        if ((key = host_key(args[1])) == NULL) break;
        int failed = PyObject_SetItem(d, key, v) < 0;
        Py_DECREF(key);
        if (failed) return NULL;
        Py_RETURN_NONE;
    }
    case VIEW: {
        if (kwnames != NULL || nargs < 1 || nargs > MAX_ARGS) break;
        PyObject *d = host_data(args[0]);
        if (d == NULL) break;
        PyObject *call_args[MAX_ARGS];
        call_args[0] = d;
        Py_ssize_t i = 1;
        for (; i < nargs && passes(args[i]); i++) call_args[i] = args[i];
        if (i < nargs) {  /* a shape as one tuple of integers: NumPy's method takes it as it is */
            if (nargs != 2 || !PyTuple_CheckExact(args[1])) break;
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(args[1]); j++)
                if (!PyLong_CheckExact(PyTuple_GET_ITEM(args[1], j))) goto fall_back;
            call_args[1] = args[1];
        }
        return wrap_handed(PyObject_Vectorcall(self->func, call_args, nargs, NULL), args, 1);  /* astype(copy=False): a */
    }
    case METHOD: {  /* the array first (a.sum(), a.dot(b)), and plain keywords: the function with it first */
        if (nargs < 1 || !plain() || (nargs > 1 && mirrors_live)) break;  /* (mirrors) an out= by position */
        /* -(a * b): a unary operator's temporary NumPy would compute into */
        if (self->also_elides && nargs == 1 && kwnames == NULL && may_be_temporary(args[0], host_data(args[0]))) break;
        int taken = 0;
        PyObject *r = run_op(self->op, self->func, args, nargs, kwnames, &taken);
        if (taken) return wrap_method(r, args, nargs);
        r = memo_run(self->op, args, nargs, kwnames, NULL, &taken);
        if (taken) return r;
        break;
    }
    case LOCAL: {  /* a view, a cast or a copy (diagonal, reshape...) of host arrays, at any size */
        if (!plain() || large_numpy_arg(args, nargs)) break;  /* (mirrors) a large NumPy array comes in */
        if (asks_object(args, nargs, kwnames)) break;  /* array(list, object): it holds the arrays themselves */
        int taken = 0;
        PyObject *r = call_hosted(self->func, NPY_MAX_INTP, args, nargs, kwnames, &taken);
        if (!taken) break;
        return wrap_handed(r, args, nargs);
    }
    case ASARRAY: {  /* asarray(a) alone: a NumPy array wrapped as it is, a dispatch array itself */
        if (nargs != 1 || kwnames != NULL || !plain()) break;
        if (PyArray_CheckExact(args[0])) {
            if (large_memory(args[0])) break;  /* (mirrors) the caller's array */
            return new_array(Py_NewRef(args[0]));
        }
        if (Py_TYPE(args[0]) == nd_type) return Py_NewRef(args[0]);
        break;
    }
    case FUNCTION:
    case UFUNC: {
        if (!plain()) break;
        PyObject *op = self->op, *func = self->func, *owned_op = NULL, *owned_func = NULL;
        PyObject *const *call_args = args;
        if (self->kind == UFUNC) {  /* a dispatch.ufunc's __call__: args[0] is the proxy */
            if (nargs < 1) break;
            if ((owned_op = op = ufunc_op(args[0])) == NULL ||
                (owned_func = func = op_func(op)) == NULL) {
                PyErr_Clear();
                Py_XDECREF(owned_op);
                break;
            }
            call_args++;
            nargs--;
            if (mirrors_live && nargs > 0) {  /* (mirrors) an out given by position: the Python path */
                PyObject *nin = PyObject_GetAttr(func, str_nin);
                Py_ssize_t inputs = nin == NULL ? -1 : PyLong_AsSsize_t(nin);
                Py_XDECREF(nin);
                if (inputs < 0 || nargs > inputs) {
                    PyErr_Clear();
                    Py_DECREF(owned_op);
                    Py_DECREF(owned_func);
                    break;
                }
            }
        }
        int taken = 0;
        PyObject *r = run_op(op, func, call_args, nargs, kwnames, &taken);
        if (taken) r = wrap_handed(r, call_args, nargs);  /* (an out given by position comes back itself) */
        else r = memo_run(op, call_args, nargs, kwnames, NULL, &taken);
        Py_XDECREF(owned_op);
        Py_XDECREF(owned_func);
        if (taken) return r;
        break;
    }
    case ARRAY_FUNCTION: {  /* __array_function__(self, func, types, args, kwargs) */
        if (nargs != 5 || kwnames != NULL || !plain()) break;
        PyObject *types = args[2], *fargs = args[3], *fkwargs = args[4], *op, *func;
        if (!PyTuple_CheckExact(types) || !PyTuple_CheckExact(fargs) || !PyDict_CheckExact(fkwargs)) break;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(types); i++) {
            PyObject *t = PyTuple_GET_ITEM(types, i);
            if (t != (PyObject *)nd_type && t != (PyObject *)&PyArray_Type) goto fall_back;
        }
        Py_ssize_t n = PyTuple_GET_SIZE(fargs), nkw = PyDict_GET_SIZE(fkwargs);
        if (n + nkw > MAX_ARGS || !table_op(self->func, args[1], &op, &func)) break;
        PyObject *flat[MAX_ARGS], *names = NULL, *key, *value;
        for (Py_ssize_t i = 0; i < n; i++) flat[i] = PyTuple_GET_ITEM(fargs, i);
        if (nkw) {  /* the keywords as vectorcall passes them */
            if ((names = PyTuple_New(nkw)) == NULL) {
                PyErr_Clear();
                Py_DECREF(op);
                Py_DECREF(func);
                break;
            }
            Py_ssize_t pos = 0, j = 0;
            while (PyDict_Next(fkwargs, &pos, &key, &value)) {
                PyTuple_SET_ITEM(names, j, Py_NewRef(key));
                flat[n + j++] = value;
            }
        }
        int taken = 0;
        PyObject *r = run_op(op, func, flat, n, names, &taken);
        if (taken) r = wrap_handed(r, flat, n);  /* (numpy.nan_to_num(a, copy=False) is a) */
        else r = memo_run(op, flat, n, names, NULL, &taken);
        Py_XDECREF(names);
        Py_DECREF(op);
        Py_DECREF(func);
        if (taken) return r;
        break;
    }
    case ARRAY_UFUNC: {  /* __array_ufunc__(self, ufunc, method, *inputs, **kwargs) */
        if (nargs < 4 || !plain() || !is_call(args[2])) break;
        PyObject *op, *func;
        if (!table_op(self->func, args[1], &op, &func)) break;
        int taken = 0;
        PyObject *r = run_op(op, func, args + 3, nargs - 3, kwnames, &taken);
        if (taken) r = wrap_result(r);
        else r = memo_run(op, args + 3, nargs - 3, kwnames, NULL, &taken);
        Py_DECREF(op);
        Py_DECREF(func);
        if (taken) return r;
        break;
    }
    case ARRAY: {  /* __array__(self, dtype=None, copy=None) */
        if (nargs < 1 || nargs > 3) break;
        PyObject *d = host_data(args[0]), *dtype = nargs > 1 ? args[1] : Py_None, *copy = nargs > 2 ? args[2] : Py_None;
        Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
        for (Py_ssize_t i = 0; i < nkw; i++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, i);
            if (PyUnicode_CompareWithASCIIString(name, "dtype") == 0) dtype = args[nargs + i];
            else if (PyUnicode_CompareWithASCIIString(name, "copy") == 0) copy = args[nargs + i];
            else goto fall_back;
        }
        if (d == NULL || dtype != Py_None || (copy != Py_None && copy != Py_False)) break;
        if (large_memory(d)) break;  /* (mirrors) handed out: the Python path */
        return Py_NewRef(d);
    }
    case COPY: {  /* a.copy() of host data: NumPy's method, at any size (a copy is made where its data is) */
        if (nargs != 1 || kwnames != NULL || !plain()) break;
        PyObject *d = host_data(args[0]);
        if (d == NULL) break;
        return wrap_result(PyObject_Vectorcall(self->func, &d, 1, NULL));
    }
    case SHAPED:
    case RANGE: {  /* a creation function: the routed function, where Dask would not take the result */
        long long n = created(self->kind, args, nargs, kwnames);
        PyObject *live = cluster_ns == NULL ? NULL : PyDict_GetItemWithError(cluster_ns, str_live);
        if (n < 0 || live == NULL || !PyLong_CheckExact(live) || !plain()) {
            PyErr_Clear();
            break;
        }
        long long limit = PyLong_AsLongLong(live);
        if (limit == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            break;
        }
        if (n >= limit) break;
        /* (creations) while device copies are kept, a result that may hold mirror_min bytes (at 16
         * bytes an element, complex128's) is made by the Python wrapper, which notes its line */
        if (self->kind == SHAPED && mirrors_live && n >= mirror_min / 16) break;
        return PyObject_Vectorcall(self->func, args, nargsf, kwnames);
    }
    case TRANSFORM: {
        if (!plain()) break;
        int taken = 0, sized = transform_sized(args, nargs, kwnames);
        if (sized < 0) break;
        PyObject *r = NULL;
        if (sized && (r = run_op(self->op, self->func, args, nargs, kwnames, &taken), taken)) return wrap_result(r);
        r = memo_run(self->op, args, nargs, kwnames, NULL, &taken);
        if (taken) return r;
        break;
    }
    }
fall_back:
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static PyObject *Fast_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *names[] = {"kind", "op", "func", "fallback", NULL};
    const char *kind_name;
    PyObject *op, *func, *fallback;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "sOOO:Fast", names, &kind_name, &op, &func, &fallback)) return NULL;
    int kind = 0;
    while (kind < KINDS && strcmp(kind_names[kind], kind_name) != 0) kind++;
    if (kind == KINDS) return PyErr_Format(PyExc_ValueError, "unknown kind %R", PyTuple_GET_ITEM(args, 0));
    if (!PyCallable_Check(fallback)) return PyErr_Format(PyExc_TypeError, "fallback must be callable");
    if (state == NULL) return PyErr_Format(PyExc_RuntimeError, "dispatch.arrays._fastpath.setup() has not been called");
    Fast *self = (Fast *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->kind = kind;
    self->elides = 1;
    if (kind == FORWARD || kind == REFLECTED) {  /* the kinds that read it */
        PyObject *signature = PyObject_GetAttrString(func, "signature"), *nout = PyObject_GetAttrString(func, "nout");
        if (signature != NULL && nout != NULL) {  /* a ufunc (else, as operator.pow: the Python path decides) */
            self->elides = signature == Py_None && PyLong_Check(nout) && PyLong_AsLong(nout) == 1;
            self->ufunc = 1;
        }
        Py_XDECREF(signature);
        Py_XDECREF(nout);
        PyErr_Clear();
    }
    self->op = Py_NewRef(op);
    self->func = Py_NewRef(func);
    self->fallback = Py_NewRef(fallback);
    self->vectorcall = (vectorcallfunc)fast_call;
    return (PyObject *)self;
}

static int Fast_traverse(Fast *self, visitproc visit, void *arg) {
    Py_VISIT(self->op);
    Py_VISIT(self->func);
    Py_VISIT(self->fallback);
    Py_VISIT(self->dict);
    return 0;
}

static int Fast_clear(Fast *self) {
    Py_CLEAR(self->op);
    Py_CLEAR(self->func);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->dict);
    return 0;
}

static void Fast_dealloc(Fast *self) {
    PyObject_GC_UnTrack(self);
    Fast_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Bound like a Python function: on an instance, a method. */
static PyObject *Fast_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyObject *Fast_name(Fast *self) {
    PyObject *name = self->dict == NULL ? NULL : PyDict_GetItemString(self->dict, "__qualname__");
    if (name == NULL && self->dict != NULL) name = PyDict_GetItemString(self->dict, "__name__");
    return name;  /* borrowed, or NULL */
}

static PyObject *Fast_repr(Fast *self) {
    PyObject *name = Fast_name(self);
    if (name == NULL) return PyUnicode_FromFormat("<dispatch %s call>", kind_names[self->kind]);
    return PyUnicode_FromFormat("<function %U>", name);
}

/* Pickled by name, as a function is: its module holds it under that name. */
static PyObject *Fast_reduce(Fast *self, PyObject *unused) {
    PyObject *name = Fast_name(self);
    if (name == NULL) return PyErr_Format(PyExc_TypeError, "cannot pickle an unnamed dispatch call");
    return Py_NewRef(name);
}

static PyObject *Fast_fallback(Fast *self, void *closure) { return Py_NewRef(self->fallback); }

static PyObject *Fast_kind(Fast *self, void *closure) { return PyUnicode_FromString(kind_names[self->kind]); }

static PyMethodDef Fast_methods[] = {
    {"__reduce__", (PyCFunction)Fast_reduce, METH_NOARGS, NULL},
    {NULL},
};

static PyGetSetDef Fast_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"fallback", (getter)Fast_fallback, NULL, "the Python function this stands in for", NULL},
    {"kind", (getter)Fast_kind, NULL, "which fast case this takes", NULL},
    {NULL},
};

static PyTypeObject FastType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dispatch.arrays._fastpath.Fast",
    .tp_doc = "A routed call whose small host cases run compiled (see dispatch/arrays/_fastpath.c).",
    .tp_basicsize = sizeof(Fast),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_new = Fast_new,
    .tp_traverse = (traverseproc)Fast_traverse,
    .tp_clear = (inquiry)Fast_clear,
    .tp_dealloc = (destructor)Fast_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Fast, vectorcall),
    .tp_descr_get = Fast_get,
    .tp_dictoffset = offsetof(Fast, dict),
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_repr = (reprfunc)Fast_repr,
    .tp_methods = Fast_methods,
    .tp_getset = Fast_getset,
};

/* A namespace function that NumPy's is a builtin of (np.zeros, np.asarray): a Fast that a class
 * holding it does not bind, as NumPy's builtins are not bound (`class T: zeros = np.zeros`).
 * Without METHOD_DESCRIPTOR the interpreter asks tp_descr_get, which hands back the function. */
static PyObject *Function_get(PyObject *self, PyObject *obj, PyObject *type) {
    return Py_NewRef(self);
}

static PyTypeObject FunctionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dispatch._fastpath.Function",
    .tp_doc = "A routed namespace function whose small host cases run compiled (see dispatch/arrays/_fastpath.c).",
    .tp_basicsize = sizeof(Fast),
    .tp_base = &FastType,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_traverse = (traverseproc)Fast_traverse,
    .tp_clear = (inquiry)Fast_clear,
    .tp_dealloc = (destructor)Fast_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Fast, vectorcall),
    .tp_descr_get = Function_get,
    .tp_dictoffset = offsetof(Fast, dict),
};

/* dispatch.ndarray's shape, dtype, ndim and size: each an `Attr` standing in for the Python
 * property, which it reads where the array's data is not a NumPy array. For NumPy data it reads
 * NumPy's own (a property's Python frame took 0.05-0.08 us a read, as long as NumPy's read). */
enum { A_SHAPE, A_DTYPE, A_NDIM, A_SIZE, ATTRS };
static const char *attr_names[ATTRS] = {"shape", "dtype", "ndim", "size"};
static PyObject *str_shape;

typedef struct {
    PyObject_HEAD
    int which;
    PyObject *prop;  /* the property it stands in for */
} Attr;

static PyObject *Attr_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    const char *name;
    PyObject *prop;
    if (!PyArg_ParseTuple(args, "sO!:Attr", &name, &PyProperty_Type, &prop)) return NULL;
    int which = 0;
    while (which < ATTRS && strcmp(name, attr_names[which]) != 0) which++;
    if (which == ATTRS) return PyErr_Format(PyExc_ValueError, "no compiled attribute %s", name);
    Attr *self = (Attr *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->which = which;
    self->prop = Py_NewRef(prop);
    return (PyObject *)self;
}

static int Attr_traverse(Attr *self, visitproc visit, void *arg) {
    Py_VISIT(self->prop);
    return 0;
}

static int Attr_clear(Attr *self) {
    Py_CLEAR(self->prop);
    return 0;
}

static void Attr_dealloc(Attr *self) {
    PyObject_GC_UnTrack(self);
    Attr_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Attr_get(Attr *self, PyObject *obj, PyObject *type) {
    PyObject *d = obj == NULL || nd_type == NULL ? NULL : host_data(obj);
    if (d == NULL) return Py_TYPE(self->prop)->tp_descr_get(self->prop, obj, type);  /* (on the class: the property) */
    PyArrayObject *a = (PyArrayObject *)d;
    switch (self->which) {
    case A_SHAPE: return PyObject_GetAttr(d, str_shape);
    case A_DTYPE: return Py_NewRef((PyObject *)PyArray_DESCR(a));
    case A_NDIM: return PyLong_FromLong(PyArray_NDIM(a));
    default: return PyLong_FromSsize_t(PyArray_SIZE(a));
    }
}

static int Attr_set(Attr *self, PyObject *obj, PyObject *value) {
    return Py_TYPE(self->prop)->tp_descr_set(self->prop, obj, value);
}

static PyObject *Attr_fallback(Attr *self, void *closure) { return Py_NewRef(self->prop); }

static PyGetSetDef Attr_getset[] = {
    {"fallback", (getter)Attr_fallback, NULL, "the property this stands in for", NULL},
    {NULL},
};

static PyTypeObject AttrType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dispatch.arrays._fastpath.Attr",
    .tp_doc = "An array attribute read compiled for NumPy data (see dispatch/arrays/_fastpath.c).",
    .tp_basicsize = sizeof(Attr),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = Attr_new,
    .tp_traverse = (traverseproc)Attr_traverse,
    .tp_clear = (inquiry)Attr_clear,
    .tp_dealloc = (destructor)Attr_dealloc,
    .tp_descr_get = (descrgetfunc)Attr_get,
    .tp_descr_set = (descrsetfunc)Attr_set,
    .tp_getset = Attr_getset,
};

/* dispatch.ufunc's call slot, pointed at the class's Fast __call__ (install_call): CPython's
 * generic slot looks __call__ up on the class and prepends the proxy to the arguments, and reading
 * the proxy's op by name passes through its __getattr__ hook (0.3 us of a dispatch.abs(a)). */
static PyObject *slot_ufunc_call(PyObject *self, PyObject *args, PyObject *kwargs) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n >= MAX_ARGS) {
        PyObject *bound = PyMethod_New(ufunc_call, self), *r = bound == NULL ? NULL : PyObject_Call(bound, args, kwargs);
        Py_XDECREF(bound);
        return r;
    }
    PyObject *stack[MAX_ARGS];
    stack[0] = self;
    for (Py_ssize_t i = 0; i < n; i++) stack[i + 1] = PyTuple_GET_ITEM(args, i);
    return PyObject_VectorcallDict(ufunc_call, stack, n + 1, kwargs);
}

/* dispatch.ndarray's operator, comparison and index slots, pointed at its Fast callables.
 *
 * A Python class's `a + b` goes through CPython's generic slot (slot_nb_add), which looks up
 * __add__ and __radd__ on both types and calls the method found. install_slots() puts functions
 * in the type's slots that call the class's Fast callables directly. Setting one of those methods
 * on the class again (dispatch.arrays._compiled.python_path, a test's patch) makes CPython put its
 * generic slot back, which calls whatever the class then holds; python_path installs them again
 * where the compiled callables return. A subclass's slots stay CPython's: its arrays reach these
 * functions only as the other operand, and are served by their methods, by name. */

/* A method of `self`, by name, on `other` (NotImplemented where the type has none). */
static PyObject *by_name(const char *method, PyObject *self, PyObject *other) {
    PyObject *name = PyUnicode_FromString(method);
    if (name == NULL) return NULL;
    PyObject *args[2] = {self, other};
    PyObject *r = PyObject_VectorcallMethod(name, args, (1 + (other != NULL)) | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(name);
    if (r == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    return r;
}

static PyObject *call_fast(PyObject *fast, PyObject *self, PyObject *other) {
    PyObject *args[2] = {self, other};
    return fast_call((Fast *)fast, args, 1 + (other != NULL), NULL);
}

/* a <op> b, where a or b is a dispatch array: a's method, or b's reflected one (CPython calls each
 * type's slot once, so a subclass's array on the other side is asked here too) */
static PyObject *binary(PyObject *forward, PyObject *reflected, const char *names[2], PyObject *a, PyObject *b) {
    if (Py_TYPE(a) == nd_type) return call_fast(forward, a, b);
    if (Py_TYPE(b) == nd_type && !PyObject_TypeCheck(a, nd_type)) return call_fast(reflected, b, a);
    PyObject *r = by_name(names[0], a, b);
    if (r != Py_NotImplemented || Py_TYPE(a) == Py_TYPE(b)) return r;
    Py_DECREF(r);
    return by_name(names[1], b, a);
}

#define BINARY_SLOT(name)                                                                  \
    static PyObject *forward_##name, *reflected_##name;                                    \
    static const char *names_##name[2] = {"__" #name "__", "__r" #name "__"};              \
    static PyObject *slot_##name(PyObject *a, PyObject *b) {                               \
        return binary(forward_##name, reflected_##name, names_##name, a, b);               \
    }
#define INPLACE_SLOT(name)                                                                 \
    static PyObject *inplace_##name;                                                       \
    static PyObject *slot_i##name(PyObject *a, PyObject *b) {                              \
        return Py_TYPE(a) == nd_type ? call_fast(inplace_##name, a, b) : by_name("__i" #name "__", a, b); \
    }
#define BINARY_SLOTS(name) BINARY_SLOT(name) INPLACE_SLOT(name)
BINARY_SLOTS(add)
BINARY_SLOTS(sub)
BINARY_SLOTS(mul)
BINARY_SLOTS(truediv)
BINARY_SLOTS(floordiv)
BINARY_SLOTS(mod)
BINARY_SLOT(divmod)
BINARY_SLOTS(pow)
BINARY_SLOTS(matmul)
BINARY_SLOTS(and)
BINARY_SLOTS(or)
BINARY_SLOTS(xor)
BINARY_SLOTS(lshift)
BINARY_SLOTS(rshift)

/* pow(a, b, m) with a modulus: NumPy's ndarray declines it, and Python raises its TypeError */
static PyObject *slot_ternary_pow(PyObject *a, PyObject *b, PyObject *m) {
    if (m != Py_None) Py_RETURN_NOTIMPLEMENTED;
    return slot_pow(a, b);
}

static PyObject *slot_ternary_ipow(PyObject *a, PyObject *b, PyObject *m) { return slot_ipow(a, b); }

#define UNARY_SLOT(name)                                                                   \
    static PyObject *unary_##name;                                                         \
    static PyObject *slot_##name(PyObject *a) {                                            \
        return Py_TYPE(a) == nd_type ? call_fast(unary_##name, a, NULL) : by_name("__" #name "__", a, NULL); \
    }
UNARY_SLOT(neg)
UNARY_SLOT(pos)
UNARY_SLOT(abs)
UNARY_SLOT(invert)

static PyObject *compare[6];  /* by Py_LT .. Py_GE */
static const char *compare_names[6] = {"__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__"};

static PyObject *slot_richcompare(PyObject *a, PyObject *b, int op) {
    return Py_TYPE(a) == nd_type ? call_fast(compare[op], a, b) : by_name(compare_names[op], a, b);
}

static PyObject *getitem, *setitem;

static PyObject *slot_subscript(PyObject *a, PyObject *key) {
    return Py_TYPE(a) == nd_type ? call_fast(getitem, a, key) : by_name("__getitem__", a, key);
}

static int slot_ass_subscript(PyObject *a, PyObject *key, PyObject *value) {
    PyObject *r;
    if (value == NULL) {
        r = PyObject_CallMethod(a, "__delitem__", "O", key);
    } else if (Py_TYPE(a) == nd_type) {
        PyObject *args[3] = {a, key, value};
        r = fast_call((Fast *)setitem, args, 3, NULL);
    } else {
        r = PyObject_CallMethod(a, "__setitem__", "OO", key, value);
    }
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* Each slot filled: its place in the heap type (as CPython's own table of slots gives it), the
 * function put there, and the methods whose Fast callables that function calls, with where
 * they are kept. A slot is filled where the class holds a Fast callable under each name. */
#define MAX_CALLS 6
typedef struct {
    Py_ssize_t offset;
    void *fn;
    const char *methods[MAX_CALLS];
    PyObject **calls[MAX_CALLS];
} SlotFill;

#define NB(slot) offsetof(PyHeapTypeObject, as_number.slot)
#define BINARY_FILLS(name, slot, islot)                                                                      \
    {NB(slot), slot_##name, {"__" #name "__", "__r" #name "__"}, {&forward_##name, &reflected_##name}},        \
    {NB(islot), slot_i##name, {"__i" #name "__"}, {&inplace_##name}}
#define UNARY_FILL(name, slot) {NB(slot), slot_##name, {"__" #name "__"}, {&unary_##name}}

static const SlotFill fills[] = {
    BINARY_FILLS(add, nb_add, nb_inplace_add),
    BINARY_FILLS(sub, nb_subtract, nb_inplace_subtract),
    BINARY_FILLS(mul, nb_multiply, nb_inplace_multiply),
    BINARY_FILLS(truediv, nb_true_divide, nb_inplace_true_divide),
    BINARY_FILLS(floordiv, nb_floor_divide, nb_inplace_floor_divide),
    BINARY_FILLS(mod, nb_remainder, nb_inplace_remainder),
    BINARY_FILLS(matmul, nb_matrix_multiply, nb_inplace_matrix_multiply),
    BINARY_FILLS(and, nb_and, nb_inplace_and),
    BINARY_FILLS(or, nb_or, nb_inplace_or),
    BINARY_FILLS(xor, nb_xor, nb_inplace_xor),
    BINARY_FILLS(lshift, nb_lshift, nb_inplace_lshift),
    BINARY_FILLS(rshift, nb_rshift, nb_inplace_rshift),
    {NB(nb_divmod), slot_divmod, {"__divmod__", "__rdivmod__"}, {&forward_divmod, &reflected_divmod}},
    {NB(nb_power), slot_ternary_pow, {"__pow__", "__rpow__"}, {&forward_pow, &reflected_pow}},
    {NB(nb_inplace_power), slot_ternary_ipow, {"__ipow__"}, {&inplace_pow}},
    UNARY_FILL(neg, nb_negative),
    UNARY_FILL(pos, nb_positive),
    UNARY_FILL(abs, nb_absolute),
    UNARY_FILL(invert, nb_invert),
    {offsetof(PyTypeObject, tp_richcompare), slot_richcompare,
     {"__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__"},
     {&compare[0], &compare[1], &compare[2], &compare[3], &compare[4], &compare[5]}},
    {offsetof(PyHeapTypeObject, as_mapping.mp_subscript), slot_subscript, {"__getitem__"}, {&getitem}},
    {offsetof(PyHeapTypeObject, as_mapping.mp_ass_subscript), slot_ass_subscript, {"__setitem__"}, {&setitem}},
};
#define FILLS ((int)(sizeof(fills) / sizeof(fills[0])))

#define SLOT_AT(fill) ((void **)((char *)nd_type + (fill).offset))

static PyObject *install_slots(PyObject *module, PyObject *unused) {
    if (nd_type == NULL) return PyErr_Format(PyExc_RuntimeError, "dispatch.arrays._fastpath.setup() has not been called");
    int filled = 0;
    for (int i = 0; i < FILLS; i++) {
        PyObject *found[MAX_CALLS] = {NULL};
        int j = 0;
        for (; j < MAX_CALLS && fills[i].methods[j] != NULL; j++) {  /* the class's own, not a base's */
            PyObject *v = PyDict_GetItemString(nd_type->tp_dict, fills[i].methods[j]);
            if (v == NULL || Py_TYPE(v) != &FastType) break;
            found[j] = v;
        }
        if (j < MAX_CALLS && fills[i].methods[j] != NULL) continue;
        for (j = 0; j < MAX_CALLS && fills[i].calls[j] != NULL; j++) Py_XSETREF(*fills[i].calls[j], Py_NewRef(found[j]));
        *SLOT_AT(fills[i]) = fills[i].fn;
        filled++;
    }
    return PyLong_FromLong(filled);
}

/* The buffer protocol (memoryview(x), Cython's typed memoryviews, bytes(x)): the buffer of the host
 * NumPy array the type's `_shared_host()` hands out (it refuses data a device holds; host data
 * is asked of __array__ directly, 0.1 us less); the exporter a memoryview names is the dispatch
 * array, which holds that NumPy array for it. Python 3.12 reads the class's __buffer__
 * instead; 3.11 has only this C slot, set on the heap type by install_buffer(type). */
static int nd_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    /* host data: __array__ hands it out (its compiled case: the data itself), as to numpy.asarray */
    PyObject *d = nd_type != NULL ? host_data(self) : NULL;
    if (d != NULL && (flags & PyBUF_FORMAT) == PyBUF_FORMAT && strchr("biufcSUO", PyArray_DESCR((PyArrayObject *)d)->kind) == NULL) {
        /* _shared_host's rule, without a call, where a format is asked (memoryview, NumPy's coercion, which
         * goes on to __array__; datetimes have no format at all): the bare memory, which its reader
         * describes itself (numpy.ndarray(shape, dtype, buffer=x)), is NumPy's to give */
        PyErr_SetString(PyExc_BufferError, "void, structured, datetime, timedelta and string-dtype arrays are read "
                                           "through __array__");
        return -1;
    }
    PyObject *host = PyObject_CallMethod(self, d != NULL ? "__array__" : "_shared_host", NULL);
    if (host == NULL) return -1;
    int r = PyObject_GetBuffer(host, view, flags);
    if (r == 0 && view->obj == host && view->internal == NULL) {
        /* the exporter a memoryview names (its .obj) is the dispatch array, as NumPy's names its array;
         * the NumPy array whose memory it is stays held (internal) until nd_releasebuffer */
        view->internal = host;  /* (the view's reference to it) */
        view->obj = Py_NewRef(self);
    }
    Py_DECREF(host);
    return r;
}

static void nd_releasebuffer(PyObject *self, Py_buffer *view) {
    Py_CLEAR(view->internal);  /* (NumPy's own buffers have nothing to release) */
}

static PyObject *install_buffer(PyObject *module, PyObject *type) {
    if (!PyType_Check(type) || !(((PyTypeObject *)type)->tp_flags & Py_TPFLAGS_HEAPTYPE))
        return PyErr_Format(PyExc_TypeError, "install_buffer() takes a class defined in Python, not %R", type);
    PyHeapTypeObject *heap = (PyHeapTypeObject *)type;
    heap->as_buffer.bf_getbuffer = nd_getbuffer;
    heap->as_buffer.bf_releasebuffer = nd_releasebuffer;  /* lets go of the NumPy array nd_getbuffer held */
    ((PyTypeObject *)type)->tp_as_buffer = &heap->as_buffer;
    Py_RETURN_NONE;
}

/* installed_lean(): whether dispatch.ndarray's deallocation is nd_dealloc, and dispatch.ufunc's call
 * slot slot_ufunc_call (each set where it fits, at setup() and install_call()). */
static PyObject *installed_lean(PyObject *module, PyObject *unused) {
    return Py_BuildValue("(OO)", nd_type != NULL && nd_type->tp_dealloc == nd_dealloc ? Py_True : Py_False,
                         ufunc_type != NULL && ufunc_type->tp_call == slot_ufunc_call ? Py_True : Py_False);
}

static PyObject *installed_slots(PyObject *module, PyObject *unused) {
    int installed = 0;
    for (int i = 0; nd_type != NULL && i < FILLS; i++) installed += *SLOT_AT(fills[i]) == fills[i].fn;
    return PyLong_FromLong(installed);
}

/* The offset of a __slots__ member of `type`, or -1 with an error set. */
static Py_ssize_t slot_offset(PyObject *type, const char *name) {
    PyObject *descr = PyObject_GetAttrString(type, name);
    if (descr == NULL) return -1;
    Py_ssize_t off = -1;
    if (Py_TYPE(descr) == &PyMemberDescr_Type) {
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type == T_OBJECT_EX || member->type == T_OBJECT) off = member->offset;
    }
    Py_DECREF(descr);
    if (off < 0) PyErr_Format(PyExc_TypeError, "%R.%s is not a __slots__ member", type, name);
    return off;
}

/* install_call(dispatch.ufunc): its call slot calls its Fast __call__ directly; whether it was set. */
static PyObject *install_call(PyObject *module, PyObject *cls) {
    if (!PyType_Check(cls)) return PyErr_Format(PyExc_TypeError, "install_call takes dispatch.ufunc");
    PyObject *call = PyDict_GetItemString(((PyTypeObject *)cls)->tp_dict, "__call__");
    if (call == NULL || Py_TYPE(call) != &FastType || ((Fast *)call)->kind != UFUNC) Py_RETURN_FALSE;
    Py_ssize_t off = slot_offset(cls, "_op");
    if (off < 0) return NULL;
    Py_XSETREF(ufunc_type, (PyTypeObject *)Py_NewRef(cls));
    Py_XSETREF(ufunc_call, Py_NewRef(call));
    ufunc_op_off = off;
    ufunc_type->tp_call = slot_ufunc_call;
    Py_RETURN_TRUE;
}

static PyObject *setup(PyObject *module, PyObject *args) {
    PyObject *nd, *st, *wrap, *op;
    PyObject *blas;
    Py_ssize_t elide;
    if (!PyArg_ParseTuple(args, "O!OOnO!O!:setup", &PyType_Type, &nd, &st, &wrap, &elide, &PyType_Type, &op,
                          &PyDict_Type, &blas))
        return NULL;
    Py_ssize_t doff = slot_offset(nd, "_engine_array"), bsoff = slot_offset(nd, "_base"), foff = slot_offset(op, "floor"), toff = slot_offset(op, "trip_floor"),
               fnoff = slot_offset(op, "func"), boff = slot_offset(op, "blas");
    if (doff < 0 || bsoff < 0 || foff < 0 || toff < 0 || fnoff < 0 || boff < 0) return NULL;
    Py_ssize_t poff = slot_offset((PyObject *)Py_TYPE(st), "plain"), hoff = slot_offset((PyObject *)Py_TYPE(st), "host_only");
    if (poff < 0 || hoff < 0) return NULL;
    if (SLOT(st, poff) == NULL) return PyErr_Format(PyExc_TypeError, "STATE.plain is unset");
    Py_XSETREF(nd_type, (PyTypeObject *)Py_NewRef(nd));
    Py_XSETREF(state, Py_NewRef(st));
    Py_XSETREF(wrap_fn, Py_NewRef(wrap));
    Py_XSETREF(op_type, (PyTypeObject *)Py_NewRef(op));
    Py_XSETREF(blas_ns, Py_NewRef(blas));
    blas_off = boff;
    data_off = doff;
    base_off = bsoff;
    plain_off = poff;
    host_only_off = hoff;
    floor_off = foff;
    trip_off = toff;
    func_off = fnoff;
    elide_bytes = elide;
    if (nd_type->tp_dealloc != nd_dealloc && lean_dealloc_fits(nd_type)) nd_type->tp_dealloc = nd_dealloc;
    Py_RETURN_NONE;
}

static PyObject *bind_router(PyObject *module, PyObject *args) {
    PyObject *r, *decision, *into;
    long long every, padded;
    if (op_type == NULL) return PyErr_Format(PyExc_RuntimeError, "dispatch.arrays._fastpath.setup() has not been called");
    if (!PyArg_ParseTuple(args, "OO!LOL:bind_router", &r, &PyType_Type, &decision, &every, &into, &padded)) return NULL;
    if (every <= 0 || padded <= 0) return PyErr_Format(PyExc_ValueError, "settled_every and fft_padded must be positive");
    PyObject *rtype = (PyObject *)Py_TYPE(r);
    Py_ssize_t moff, soff, stoff, coff, memoff, eoff;  /* each checked at once: a missing one raises */
    if ((moff = slot_offset((PyObject *)op_type, "mutates")) < 0 || (soff = slot_offset(decision, "sample")) < 0 ||
        (stoff = slot_offset(decision, "settled")) < 0 || (coff = slot_offset(decision, "calls")) < 0 ||
        (memoff = slot_offset(rtype, "memo")) < 0 || (eoff = slot_offset(rtype, "epoch")) < 0)
        return NULL;
    Py_XSETREF(router_obj, Py_NewRef(r));
    Py_XSETREF(decision_type, (PyTypeObject *)Py_NewRef(decision));
    Py_XSETREF(into_marker, Py_NewRef(into));
    mutates_off = moff;
    dsample_off = soff;
    dsettled_off = stoff;
    dcalls_off = coff;
    memo_off = memoff;
    epoch_off = eoff;
    settled_every = every;
    fft_padded = padded;
    Py_RETURN_NONE;
}

static PyObject *get_memo_served(PyObject *module, PyObject *unused) {
    return PyLong_FromUnsignedLongLong(memo_hits);
}

static PyObject *setup_creation(PyObject *module, PyObject *ns) {
    if (!PyDict_Check(ns)) return PyErr_Format(PyExc_TypeError, "setup_creation takes vars(dispatch.cluster)");
    Py_XSETREF(cluster_ns, Py_NewRef(ns));
    Py_RETURN_NONE;
}

static PyObject *py_from_interpreter(PyObject *module, PyObject *unused) {
    return PyBool_FromLong(from_interpreter());
}

static PyObject *get_refs_seen(PyObject *module, PyObject *unused) {
    return PyLong_FromSsize_t(refs_seen);
}

static PyObject *set_also_elides(PyObject *module, PyObject *arg) {
    if (Py_TYPE(arg) != &FastType) return PyErr_Format(PyExc_TypeError, "also_elides() takes a compiled operator");
    ((Fast *)arg)->also_elides = 1;
    Py_RETURN_NONE;
}

static PyObject *set_temporary_refs(PyObject *module, PyObject *arg) {
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    temporary_refs = n;
    Py_RETURN_NONE;
}

static PyObject *set_mirrors(PyObject *module, PyObject *args) {
    int live;
    Py_ssize_t min_bytes;
    PyObject *owners = NULL;
    if (!PyArg_ParseTuple(args, "pn|O!", &live, &min_bytes, &PyDict_Type, &owners)) return NULL;
    mirrors_live = live;
    mirror_min = min_bytes;
    if (owners != NULL) Py_XSETREF(mirror_owners, Py_NewRef(owners));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"set_mirrors", set_mirrors, METH_VARARGS,
     "set_mirrors(live, min_bytes, owners=None): whether device copies of host data are kept, the smallest array mirrored, and the mirrors' write counters by id(owner)"},
    {"from_interpreter", py_from_interpreter, METH_NOARGS,
     "from_interpreter(): whether no frame of NumPy's extension is on the C stack (no object loop holds the operand)"},
    {"refs_seen", get_refs_seen, METH_NOARGS,
     "refs_seen(): the reference count of the last large operand an operator handed to Python"},
    {"also_elides", set_also_elides, METH_O,
     "also_elides(f): operator f may compute into a temporary right operand (+ * & | ^) or its own (- + abs ~)"},
    {"set_temporary_refs", set_temporary_refs, METH_O,
     "set_temporary_refs(n): operands held more than n times stay on the compiled path (-1: none does)"},
    {"setup", setup, METH_VARARGS,
     "setup(ndarray, STATE, wrap, elide_bytes, Op, vars(blas_spin)): what the fast path reads on each call"},
    {"install_slots", install_slots, METH_NOARGS,
     "install_slots(): dispatch.ndarray's operator and index slots call its Fast callables directly"},
    {"install_buffer", install_buffer, METH_O,
     "install_buffer(type): the class exports the buffer of the host array its _shared_host() hands out"},
    {"install_call", install_call, METH_O,
     "install_call(dispatch.ufunc): its call slot calls its Fast __call__ directly"},
    {"installed_lean", installed_lean, METH_NOARGS,
     "installed_lean(): (dispatch.ndarray's deallocation is the compiled one, dispatch.ufunc's call slot is)"},
    {"installed_slots", installed_slots, METH_NOARGS,
     "installed_slots(): how many of dispatch.ndarray's slots call its Fast callables directly"},
    {"setup_creation", setup_creation, METH_O,
     "setup_creation(vars(dispatch.cluster)): where the creation functions' LIVE_ELEMENTS is"},
    {"bind_router", bind_router, METH_VARARGS,
     "bind_router(router, Decision, settled_every, into, fft_padded): what serving the memo reads"},
    {"memo_served", get_memo_served, METH_NOARGS,
     "memo_served(): how many calls were served from the memo here"},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "dispatch.arrays._fastpath", "The compiled fast path of dispatch's host calls.", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__fastpath(void) {
    import_array();
    if (PyType_Ready(&FastType) < 0 || PyType_Ready(&FunctionType) < 0 || PyType_Ready(&AttrType) < 0) return NULL;
    str_shape = PyUnicode_InternFromString("shape");
    if (str_shape == NULL) return NULL;
    str_floor = PyUnicode_InternFromString("floor");
    str_trip = PyUnicode_InternFromString("trip_floor");
    str_func = PyUnicode_InternFromString("func");
    str_op = PyUnicode_InternFromString("_op");
    str_out = PyUnicode_InternFromString("out");
    str_nin = PyUnicode_InternFromString("nin");
    str_fields = PyUnicode_InternFromString("_fields");
    out_names = PyTuple_Pack(1, str_out);
    elision_cache = PyDict_New();
    str_resolve_dtypes = PyUnicode_InternFromString("resolve_dtypes");
    bool_descr = PyArray_DescrFromType(NPY_BOOL);
    if (elision_cache == NULL || str_resolve_dtypes == NULL || bool_descr == NULL) return NULL;
    str_last = PyUnicode_InternFromString("_last");
    PyObject *time = PyImport_ImportModule("time");
    if (time == NULL) return NULL;
    perf_counter = PyObject_GetAttrString(time, "perf_counter");
    Py_DECREF(time);
    if (perf_counter == NULL || str_last == NULL) return NULL;
    str_live = PyUnicode_InternFromString("LIVE_ELEMENTS");
    if (!str_live) return NULL;
    if (!str_floor || !str_trip || !str_func || !str_op || !str_nin || !str_fields ||
        !out_names)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Fast", (PyObject *)&FastType) < 0 ||
        PyModule_AddObjectRef(m, "Function", (PyObject *)&FunctionType) < 0 ||
        PyModule_AddObjectRef(m, "Attr", (PyObject *)&AttrType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
