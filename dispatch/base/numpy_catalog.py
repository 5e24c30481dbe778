"""The NumPy catalog: every ufunc and array function of ``numpy``, ``numpy.linalg``,
``numpy.fft`` and ``numpy.random``, with its complexity, its work shape and its
counterparts in CuPy and PyTorch.

Work shapes (how the cost model sizes a call; see ``dispatch.work``):

- ``map``: element-wise over the broadcast output, O(n)
- ``view``: a view or metadata change, no element is touched
- ``copy``: moves each element once (stacking, tiling, padding, fancy takes)
- ``create``: writes a new array of the output size
- ``reduce``: reads each input element once and writes a small result
- ``scan``: cumulative, reads and writes every element in order
- ``matmul``: ``2·m·k·n`` multiply-adds from the operand shapes
- ``cubic``: dense factorisation, ``~ m·n·min(m, n)`` work
- ``sort``: comparison sort, ``n·log n``
- ``fft``: ``5·n·log2 n``
- ``random``: draws from a bit generator (streams must equal NumPy's): on the host, but for
  ``DEVICE_DRAWS``, which a CUDA device draws bit for bit and the router places as any call
- ``host``: not array work (I/O, printing, dtype queries): always NumPy on the host

Counterparts: ``=`` the same name, ``-`` none. The torch column names ``torch.<name>``.
"""

from __future__ import annotations

from dispatch.base.catalog import make_enum, parse_table

WORKS = frozenset(
    {"map", "view", "copy", "create", "reduce", "scan", "matmul", "cubic", "sort", "fft", "random", "host"}
)

_TABLE = """
# ---- ufuncs: element-wise, LOW --------------------------------------------------------------
# name                 complexity work    cupy              torch
abs                    LOW    map     =                 abs
absolute               LOW    map     =                 abs
acos                   LOW    map     arccos            acos
acosh                  LOW    map     arccosh           acosh
add                    LOW    map     =                 add
arccos                 LOW    map     =                 acos
arccosh                LOW    map     =                 acosh
arcsin                 LOW    map     =                 asin
arcsinh                LOW    map     =                 asinh
arctan                 LOW    map     =                 atan
arctan2                LOW    map     =                 atan2
arctanh                LOW    map     =                 atanh
asin                   LOW    map     arcsin            asin
asinh                  LOW    map     arcsinh           asinh
atan                   LOW    map     arctan            atan
atan2                  LOW    map     arctan2           atan2
atanh                  LOW    map     arctanh           atanh
bitwise_and            LOW    map     =                 bitwise_and
bitwise_count          LOW    map     =                 -
bitwise_invert         LOW    map     invert            bitwise_not
bitwise_left_shift     LOW    map     left_shift        bitwise_left_shift
bitwise_not            LOW    map     invert            bitwise_not
bitwise_or             LOW    map     =                 bitwise_or
bitwise_right_shift    LOW    map     right_shift       bitwise_right_shift
bitwise_xor            LOW    map     =                 bitwise_xor
cbrt                   LOW    map     =                 -
ceil                   LOW    map     =                 ceil
conj                   LOW    map     =                 conj_physical
conjugate              LOW    map     =                 conj_physical
copysign               LOW    map     =                 copysign
cos                    LOW    map     =                 cos
cosh                   LOW    map     =                 cosh
deg2rad                LOW    map     =                 deg2rad
degrees                LOW    map     =                 rad2deg
divide                 LOW    map     =                 divide
divmod                 LOW    map     =                 -
equal                  LOW    map     =                 eq
exp                    LOW    map     =                 exp
exp2                   LOW    map     =                 exp2
expm1                  LOW    map     =                 expm1
fabs                   LOW    map     =                 abs
float_power            LOW    map     =                 float_power
floor                  LOW    map     =                 floor
floor_divide           LOW    map     =                 floor_divide
fmax                   LOW    map     =                 fmax
fmin                   LOW    map     =                 fmin
fmod                   LOW    map     =                 fmod
frexp                  LOW    map     =                 frexp
gcd                    LOW    map     =                 gcd
greater                LOW    map     =                 gt
greater_equal          LOW    map     =                 ge
heaviside              LOW    map     =                 heaviside
hypot                  LOW    map     =                 hypot
invert                 LOW    map     =                 bitwise_not
isfinite               LOW    map     =                 isfinite
isinf                  LOW    map     =                 isinf
isnan                  LOW    map     =                 isnan
isnat                  LOW    map     -                 -             # datetime only
lcm                    LOW    map     =                 lcm
ldexp                  LOW    map     =                 ldexp
left_shift             LOW    map     =                 bitwise_left_shift
less                   LOW    map     =                 lt
less_equal             LOW    map     =                 le
log                    LOW    map     =                 log
log10                  LOW    map     =                 log10
log1p                  LOW    map     =                 log1p
log2                   LOW    map     =                 log2
logaddexp              LOW    map     =                 logaddexp
logaddexp2             LOW    map     =                 logaddexp2
logical_and            LOW    map     =                 logical_and
logical_not            LOW    map     =                 logical_not
logical_or             LOW    map     =                 logical_or
logical_xor            LOW    map     =                 logical_xor
maximum                LOW    map     =                 maximum
minimum                LOW    map     =                 minimum
mod                    LOW    map     remainder         remainder
modf                   LOW    map     =                 -
multiply               LOW    map     =                 mul
negative               LOW    map     =                 neg
nextafter              LOW    map     =                 nextafter
not_equal              LOW    map     =                 ne
positive               LOW    map     =                 positive
pow                    LOW    map     power             pow
power                  LOW    map     =                 pow
rad2deg                LOW    map     =                 rad2deg
radians                LOW    map     =                 deg2rad
reciprocal             LOW    map     =                 reciprocal
remainder              LOW    map     =                 remainder
right_shift            LOW    map     =                 bitwise_right_shift
rint                   LOW    map     =                 round
sign                   LOW    map     =                 sign
signbit                LOW    map     =                 signbit
sin                    LOW    map     =                 sin
sinh                   LOW    map     =                 sinh
spacing                LOW    map     -                 -
sqrt                   LOW    map     =                 sqrt
square                 LOW    map     =                 square
subtract               LOW    map     =                 sub
tan                    LOW    map     =                 tan
tanh                   LOW    map     =                 tanh
true_divide            LOW    map     =                 true_divide
trunc                  LOW    map     =                 trunc
# ufuncs that contract an axis are products, not maps
matmul                 HIGH   matmul  =                 matmul
matvec                 MEDIUM matmul  =                 -             # one pass over the matrix: O(n) in its size
vecmat                 MEDIUM matmul  =                 -             # one pass over the matrix: O(n) in its size
vecdot                 MEDIUM reduce  =                 linalg.vecdot

# ---- element-wise functions that are not ufuncs ---------------------------------------------
angle                  LOW    map     =                 angle
around                 LOW    map     =                 round
clip                   LOW    map     =                 clip
fix                    LOW    map     =                 fix
i0                     LOW    map     =                 i0
imag                   LOW    view    =                 imag
iscomplex              LOW    map     =                 -
isneginf               LOW    map     =                 isneginf
isposinf               LOW    map     =                 isposinf
isreal                 LOW    map     =                 isreal
isclose                LOW    map     =                 isclose
nan_to_num             LOW    map     =                 nan_to_num
real                   LOW    view    =                 real
real_if_close          LOW    map     -                 -
round                  LOW    map     =                 round
sinc                   LOW    map     =                 sinc
where                  LOW    map     =                 where
select                 LOW    map     =                 -
choose                 LOW    map     =                 -
piecewise              LOW    map     =                 -
unwrap                 LOW    map     -                 -

# ---- shape and view ops: no arithmetic, LOW --------------------------------------------------
astype                 LOW    copy    =                 -
atleast_1d             LOW    view    =                 atleast_1d
atleast_2d             LOW    view    =                 atleast_2d
atleast_3d             LOW    view    =                 atleast_3d
broadcast_arrays       LOW    view    =                 broadcast_tensors
broadcast_to           LOW    view    =                 broadcast_to
diagonal               LOW    view    =                 diagonal
expand_dims            LOW    view    =                 unsqueeze
flip                   LOW    view    =                 flip
fliplr                 LOW    view    =                 fliplr
flipud                 LOW    view    =                 flipud
matrix_transpose       LOW    view    -                 Tensor.mT
moveaxis               LOW    view    =                 moveaxis
permute_dims           LOW    view    transpose         permute
ravel                  LOW    view    =                 ravel
reshape                LOW    view    =                 reshape
rollaxis               LOW    view    =                 -
squeeze                LOW    view    =                 squeeze
swapaxes               LOW    view    =                 swapaxes
transpose              LOW    view    =                 permute
# copies: each element moved once
append                 LOW    copy    =                 -
array_split            LOW    view    =                 tensor_split
block                  LOW    copy    -                 -
column_stack           LOW    copy    =                 column_stack
compress               LOW    copy    =                 -
concat                 LOW    copy    concatenate       cat
concatenate            LOW    copy    =                 cat
copy                   LOW    copy    =                 clone
copyto                 LOW    copy    =                 -
delete                 LOW    copy    -                 -
diag                   LOW    copy    =                 diag
diagflat               LOW    copy    =                 diagflat
dsplit                 LOW    view    =                 dsplit
dstack                 LOW    copy    =                 dstack
extract                LOW    copy    =                 masked_select
fill_diagonal          LOW    copy    =                 Tensor.fill_diagonal_
hsplit                 LOW    view    =                 hsplit
hstack                 LOW    copy    =                 hstack
insert                 LOW    copy    -                 -
pad                    LOW    copy    =                 nn.functional.pad
place                  LOW    copy    =                 -
put                    LOW    copy    =                 put
put_along_axis         LOW    copy    =                 scatter
putmask                LOW    copy    =                 -
repeat                 LOW    copy    =                 repeat_interleave
resize                 LOW    copy    -                 -
roll                   LOW    copy    =                 roll
rot90                  LOW    copy    =                 rot90
split                  LOW    view    =                 tensor_split
stack                  LOW    copy    =                 stack
take                   LOW    copy    =                 take
take_along_axis        LOW    copy    =                 take_along_dim
tile                   LOW    copy    =                 tile
tril                   LOW    copy    =                 tril
triu                   LOW    copy    =                 triu
trim_zeros             LOW    copy    -                 -
unstack                LOW    view    -                 unbind
vsplit                 LOW    view    =                 vsplit
vstack                 LOW    copy    =                 vstack
row_stack              LOW    copy    vstack            vstack

# ---- creation: writes its output once, LOW ---------------------------------------------------
arange                 LOW    create  =                 arange
array                  LOW    create  =                 tensor
asanyarray             LOW    create  =                 asarray
asarray                LOW    create  =                 asarray
asarray_chkfinite      LOW    create  =                 -
ascontiguousarray      LOW    copy    =                 -
asfortranarray         LOW    copy    =                 -
bartlett               LOW    create  =                 bartlett_window
blackman               LOW    create  =                 blackman_window
diag_indices           LOW    create  =                 -
diag_indices_from      LOW    create  =                 -
empty                  LOW    create  =                 empty
empty_like             LOW    create  =                 empty_like
eye                    LOW    create  =                 eye
from_dlpack            LOW    view    =                 from_dlpack
frombuffer             LOW    create  -                 frombuffer
fromfunction           LOW    create  =                 -
fromiter               LOW    create  -                 -
full                   LOW    create  =                 full
full_like              LOW    create  =                 full_like
geomspace              LOW    create  =                 -
hamming                LOW    create  =                 hamming_window
hanning                LOW    create  =                 hann_window
identity               LOW    create  =                 eye
indices                LOW    create  =                 -
ix_                    LOW    create  =                 -
kaiser                 LOW    create  =                 kaiser_window
linspace               LOW    create  =                 linspace
logspace               LOW    create  =                 logspace
mask_indices           LOW    create  -                 -
meshgrid               LOW    create  =                 meshgrid
ones                   LOW    create  =                 ones
ones_like              LOW    create  =                 ones_like
require                LOW    copy    -                 -
tri                    LOW    create  =                 -
tril_indices           LOW    create  =                 tril_indices
tril_indices_from      LOW    create  =                 -
triu_indices           LOW    create  =                 triu_indices
triu_indices_from      LOW    create  =                 -
vander                 LOW    create  =                 vander
zeros                  LOW    create  =                 zeros
zeros_like             LOW    create  =                 zeros_like

# ---- index queries and small logic, LOW -------------------------------------------------------
argwhere               LOW    copy    =                 argwhere
flatnonzero            LOW    copy    =                 -
nonzero                LOW    copy    =                 nonzero
ravel_multi_index      LOW    map     =                 -
unravel_index          LOW    map     =                 unravel_index
isin                   HIGH   sort    =                 isin          # sorts the test values
searchsorted           HIGH   sort    =                 searchsorted  # n·log m binary searches
digitize               HIGH   sort    =                 bucketize     # n·log m binary searches
packbits               LOW    map     =                 -
unpackbits             LOW    map     =                 -
array_equal            MEDIUM reduce  =                 equal         # compares every element, one bool out
array_equiv            MEDIUM reduce  -                 -
allclose               MEDIUM reduce  =                 allclose
shares_memory          LOW    host    =                 -
may_share_memory       LOW    host    =                 -

# ---- reductions: one pass over the input, MEDIUM ------------------------------------------------
all                    MEDIUM reduce  =                 all
amax                   MEDIUM reduce  =                 amax
amin                   MEDIUM reduce  =                 amin
any                    MEDIUM reduce  =                 any
argmax                 MEDIUM reduce  =                 argmax
argmin                 MEDIUM reduce  =                 argmin
average                MEDIUM reduce  =                 -
count_nonzero          MEDIUM reduce  =                 count_nonzero
max                    MEDIUM reduce  =                 amax
mean                   MEDIUM reduce  =                 mean
min                    MEDIUM reduce  =                 amin
nanargmax              MEDIUM reduce  =                 -
nanargmin              MEDIUM reduce  =                 -
nanmax                 MEDIUM reduce  =                 -
nanmean                MEDIUM reduce  =                 nanmean
nanmin                 MEDIUM reduce  =                 -
nanprod                MEDIUM reduce  =                 -
nanstd                 MEDIUM reduce  =                 -
nansum                 MEDIUM reduce  =                 nansum
nanvar                 MEDIUM reduce  =                 -
prod                   MEDIUM reduce  =                 prod
ptp                    MEDIUM reduce  =                 -
std                    MEDIUM reduce  =                 std
sum                    MEDIUM reduce  =                 sum
trace                  MEDIUM reduce  =                 trace
trapezoid              MEDIUM reduce  =                 trapezoid
var                    MEDIUM reduce  =                 var
bincount               MEDIUM reduce  =                 bincount
histogram              HIGH   sort    =                 histogram     # bin search per element
histogram2d            HIGH   sort    =                 -             # bin search per element
histogramdd            HIGH   sort    =                 histogramdd   # bin search per element
histogram_bin_edges    MEDIUM reduce  =                 -
corrcoef               HIGH   matmul  =                 corrcoef      # an X·Xᵀ product
cov                    HIGH   matmul  =                 cov           # an X·Xᵀ product
# dot of vectors is a reduction; of matrices a product: the seed tags dot HIGH
dot                    HIGH   matmul  =                 matmul
inner                  HIGH   matmul  =                 inner
outer                  MEDIUM map     =                 outer         # O(m·n) writes, no contraction
vdot                   MEDIUM reduce  =                 vdot
tensordot              HIGH   matmul  =                 tensordot
einsum                 HIGH   matmul  =                 einsum
einsum_path            LOW    host    =                 -
kron                   MEDIUM map     =                 kron          # O(output) writes, no contraction
cross                  LOW    map     =                 cross
diff                   LOW    map     =                 diff
ediff1d                LOW    map     =                 -
gradient               LOW    map     =                 gradient
interp                 HIGH   sort    =                 -             # binary search per point

# ---- cumulative ops: MEDIUM ------------------------------------------------------------------
cumprod                MEDIUM scan    =                 cumprod
cumsum                 MEDIUM scan    =                 cumsum
cumulative_prod        MEDIUM scan    =                 cumprod
cumulative_sum         MEDIUM scan    =                 cumsum
nancumprod             MEDIUM scan    =                 -
nancumsum              MEDIUM scan    =                 -

# ---- sorting, selection and set ops: superlinear, HIGH -------------------------------------------
argpartition           HIGH   sort    =                 -             # introselect, n·log n worst case
argsort                HIGH   sort    =                 argsort
lexsort                HIGH   sort    =                 -
median                 HIGH   sort    =                 median        # a selection per call
nanmedian              HIGH   sort    =                 nanmedian     # a selection per call
nanpercentile          HIGH   sort    =                 -             # a selection per call
nanquantile            HIGH   sort    =                 nanquantile   # a selection per call
partition              HIGH   sort    =                 -             # introselect, n·log n worst case
percentile             HIGH   sort    =                 -             # a selection per call
quantile               HIGH   sort    =                 quantile      # a selection per call
sort                   HIGH   sort    =                 sort
sort_complex           HIGH   sort    =                 -
intersect1d            HIGH   sort    =                 -             # sorts both inputs
setdiff1d              HIGH   sort    =                 -             # sorts both inputs
setxor1d               HIGH   sort    =                 -             # sorts both inputs
union1d                HIGH   sort    =                 -             # sorts both inputs
unique                 HIGH   sort    =                 unique        # sorts
unique_all             HIGH   sort    =                 -             # sorts
unique_counts          HIGH   sort    =                 -             # sorts
unique_inverse         HIGH   sort    =                 -             # sorts
unique_values          HIGH   sort    =                 -             # sorts

# ---- signal and polynomial: products in disguise, HIGH -----------------------------------------
convolve               HIGH   matmul  =                 -             # O(n·m) multiply-adds
correlate              HIGH   matmul  =                 -             # O(n·m) multiply-adds
poly                   HIGH   matmul  =                 -             # repeated convolutions
polyadd                LOW    map     =                 -
polyder                LOW    map     -                 -
polydiv                HIGH   matmul  -                 -             # long division, O(n·m)
polyfit                HIGH   cubic   =                 -             # a least-squares solve
polyint                LOW    map     -                 -
polymul                HIGH   matmul  =                 -             # a convolution
polysub                LOW    map     =                 -
polyval                MEDIUM map     =                 -             # Horner: O(n·degree)
roots                  HIGH   cubic   =                 -             # eigenvalues of the companion matrix
apply_along_axis       MEDIUM host    =                 -             # calls Python per slice
apply_over_axes        MEDIUM host    =                 -             # calls Python per axis

# ---- dtype, shape and printing queries: not array work ----------------------------------------
array2string           LOW    host    -                 -
array_repr             LOW    host    -                 -
array_str              LOW    host    -                 -
base_repr              LOW    host    =                 -
binary_repr            LOW    host    =                 -
broadcast_shapes       LOW    host    =                 broadcast_shapes
can_cast               LOW    host    =                 can_cast
common_type            LOW    host    =                 -
iscomplexobj           LOW    host    =                 is_complex
isdtype                LOW    host    =                 -
isfortran              LOW    host    =                 -
isrealobj              LOW    host    =                 -
isscalar               LOW    host    =                 -
issubdtype             LOW    host    =                 -
iterable               LOW    host    -                 -
min_scalar_type        LOW    host    =                 -
mintypecode            LOW    host    =                 -
ndim                   LOW    host    =                 -
promote_types          LOW    host    =                 promote_types
result_type            LOW    host    =                 result_type
shape                  LOW    host    =                 -
size                   LOW    host    =                 numel
typename               LOW    host    -                 -
# I/O and process state run on the host by definition
busday_count           LOW    host    -                 -
busday_offset          LOW    host    -                 -
datetime_as_string     LOW    host    -                 -
datetime_data          LOW    host    -                 -
format_float_positional LOW   host    -                 -
format_float_scientific LOW   host    -                 -
fromfile               LOW    host    -                 -
fromregex              LOW    host    -                 -
fromstring             LOW    host    -                 -
frompyfunc             LOW    host    -                 -
genfromtxt             LOW    host    -                 -
get_include            LOW    host    -                 -
get_printoptions       LOW    host    -                 -
getbufsize             LOW    host    -                 -
geterr                 LOW    host    -                 -
geterrcall             LOW    host    -                 -
info                   LOW    host    -                 -
is_busday              LOW    host    -                 -
load                   LOW    host    =                 load
loadtxt                LOW    host    =                 -
nested_iters           LOW    host    -                 -
printoptions           LOW    host    -                 -
save                   LOW    host    =                 save
savetxt                LOW    host    =                 -
savez                  LOW    host    =                 -
savez_compressed       LOW    host    =                 -
set_printoptions       LOW    host    -                 set_printoptions
setbufsize             LOW    host    -                 -
seterr                 LOW    host    -                 -
seterrcall             LOW    host    -                 -
show_config            LOW    host    -                 -
show_runtime           LOW    host    -                 -
asmatrix               LOW    host    -                 -             # np.matrix stays NumPy's
bmat                   LOW    host    -                 -             # np.matrix stays NumPy's

# ---- numpy.linalg ------------------------------------------------------------------------------
linalg.cholesky        HIGH   cubic   =                 linalg.cholesky
linalg.cond            HIGH   cubic   -                 linalg.cond   # an SVD
linalg.cross           LOW    map     -                 linalg.cross
linalg.det             HIGH   cubic   =                 linalg.det    # an LU factorisation
linalg.diagonal        LOW    view    -                 linalg.diagonal
linalg.eig             HIGH   cubic   =                 linalg.eig
linalg.eigh            HIGH   cubic   =                 linalg.eigh
linalg.eigvals         HIGH   cubic   =                 linalg.eigvals
linalg.eigvalsh        HIGH   cubic   =                 linalg.eigvalsh
linalg.inv             HIGH   cubic   =                 linalg.inv
linalg.lstsq           HIGH   cubic   =                 linalg.lstsq
linalg.matmul          HIGH   matmul  -                 linalg.matmul
linalg.matrix_norm     MEDIUM reduce  -                 linalg.matrix_norm
linalg.matrix_power    HIGH   matmul  =                 linalg.matrix_power
linalg.matrix_rank     HIGH   cubic   =                 linalg.matrix_rank  # an SVD
linalg.matrix_transpose LOW   view    -                 Tensor.mT
linalg.multi_dot       HIGH   matmul  -                 linalg.multi_dot
linalg.norm            MEDIUM reduce  =                 linalg.norm   # vector and Frobenius norms are one pass
linalg.outer           MEDIUM map     -                 outer
linalg.pinv            HIGH   cubic   =                 linalg.pinv
linalg.qr              HIGH   cubic   =                 linalg.qr
linalg.slogdet         HIGH   cubic   =                 linalg.slogdet
linalg.solve           HIGH   cubic   =                 linalg.solve
linalg.svd             HIGH   cubic   =                 linalg.svd
linalg.svdvals         HIGH   cubic   -                 linalg.svdvals
linalg.tensordot       HIGH   matmul  -                 tensordot
linalg.tensorinv       HIGH   cubic   =                 linalg.tensorinv
linalg.tensorsolve     HIGH   cubic   =                 linalg.tensorsolve
linalg.trace           MEDIUM reduce  -                 trace
linalg.vecdot          MEDIUM reduce  -                 linalg.vecdot
linalg.vector_norm     MEDIUM reduce  -                 linalg.vector_norm

# ---- numpy.fft: n·log n butterflies, HIGH -------------------------------------------------------
fft.fft                HIGH   fft     =                 fft.fft
fft.fft2               HIGH   fft     =                 fft.fft2
fft.fftn               HIGH   fft     =                 fft.fftn
fft.hfft               HIGH   fft     =                 fft.hfft
fft.ifft               HIGH   fft     =                 fft.ifft
fft.ifft2              HIGH   fft     =                 fft.ifft2
fft.ifftn              HIGH   fft     =                 fft.ifftn
fft.ihfft              HIGH   fft     =                 fft.ihfft
fft.irfft              HIGH   fft     =                 fft.irfft
fft.irfft2             HIGH   fft     =                 fft.irfft2
fft.irfftn             HIGH   fft     =                 fft.irfftn
fft.rfft               HIGH   fft     =                 fft.rfft
fft.rfft2              HIGH   fft     =                 fft.rfft2
fft.rfftn              HIGH   fft     =                 fft.rfftn
fft.fftfreq            LOW    create  =                 fft.fftfreq
fft.rfftfreq           LOW    create  =                 fft.rfftfreq
fft.fftshift           LOW    copy    =                 fft.fftshift
fft.ifftshift          LOW    copy    =                 fft.ifftshift

# ---- numpy.random: streams are NumPy's own, drawn on the host, LOW ------------------------------
random.beta                    LOW random  =   -
random.binomial               LOW random  =   binomial
random.bytes                  LOW random  =   -
random.chisquare              LOW random  =   -
random.choice                 LOW random  =   multinomial
random.default_rng            LOW random  =   Generator
random.dirichlet              LOW random  =   -
random.exponential            LOW random  =   -
random.f                      LOW random  =   -
random.gamma                  LOW random  =   -
random.geometric              LOW random  =   -
random.get_bit_generator      LOW random  =   -
random.get_state              LOW random  =   get_rng_state
random.gumbel                 LOW random  =   -
random.hypergeometric         LOW random  =   -
random.laplace                LOW random  =   -
random.logistic               LOW random  =   -
random.lognormal              LOW random  =   -
random.logseries              LOW random  =   -
random.multinomial            LOW random  =   -
random.multivariate_normal    HIGH random =   -             # a Cholesky/SVD of the covariance
random.negative_binomial      LOW random  =   -
random.noncentral_chisquare   LOW random  =   -
random.noncentral_f           LOW random  =   -
random.normal                 LOW random  =   normal
random.pareto                 LOW random  =   -
random.permutation            HIGH random =   randperm      # a shuffle is a random sort
random.poisson                LOW random  =   poisson
random.power                  LOW random  =   -
random.rand                   LOW random  =   rand
random.randint                LOW random  =   randint
random.randn                  LOW random  =   randn
random.random                 LOW random  =   rand
random.random_integers        LOW random  =   -
random.random_sample          LOW random  =   rand
random.ranf                   LOW random  =   rand
random.rayleigh               LOW random  =   -
random.sample                 LOW random  =   rand
random.seed                   LOW random  =   manual_seed
random.set_bit_generator      LOW random  =   -
random.set_state              LOW random  =   set_rng_state
random.shuffle                HIGH random =   randperm      # a shuffle is a random sort
random.standard_cauchy        LOW random  =   -
random.standard_exponential   LOW random  =   -
random.standard_gamma         LOW random  =   -
random.standard_normal        LOW random  =   randn
random.standard_t             LOW random  =   -
random.triangular             LOW random  =   -
random.uniform                LOW random  =   rand
random.vonmises               LOW random  =   -
random.wald                   LOW random  =   -
random.weibull                LOW random  =   -
random.zipf                   LOW random  =   -

# ---- numpy.random.Generator on PCG64: drawn where the router places them (dispatch.streams), -----
# bit for bit NumPy's stream on a CUDA device; on any other bit generator, NumPy's own method
random.Generator.integers              LOW random  -   -
random.Generator.random                LOW random  -   -
random.Generator.standard_normal       LOW random  -   -
random.Generator.normal                LOW random  -   -
random.Generator.uniform               LOW random  -   -
random.Generator.standard_exponential  LOW random  -   -
random.Generator.exponential           LOW random  -   -
"""

NUMPY_CATALOG = parse_table(_TABLE, ("cupy", "torch"), WORKS)

# The draws a CUDA device makes bit for bit (``dispatch.streams``): routed calls, priced on the
# host and there (``dispatch.streams.prices``); every other draw is a host op.
DEVICE_DRAWS = frozenset(name for name in NUMPY_CATALOG if name.startswith("random.Generator."))

# Catalog names that newer NumPy releases removed (after deprecating them), with the first
# release without them. Their entries stay, for programs on older NumPy; where the installed
# NumPy lacks one, ``dispatch`` has no such attribute either, as NumPy has not.
REMOVED_IN_NUMPY = {"row_stack": "2.5"}


def __getattr__(name: str) -> object:
    # ``NumPyOp`` (an enum of every entry, the converters' vocabulary) is built when first asked
    # for: routing reads the table, and an enum of 500 members took a noticeable share of a
    # script's start
    if name == "NumPyOp":
        made = globals()["NumPyOp"] = make_enum("NumPyOp", __name__, NUMPY_CATALOG)
        return made
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---- the equality contract (docs/equality.md) ----------------------------------------------------
# Ops whose float results another target may round otherwise than NumPy in the last bits: strict
# mode (``DISPATCH_EXACT``) keeps them on NumPy. Every op not listed is bit-identical everywhere.

# Element-wise functions IEEE 754 does not round correctly (each math library has its own), and
# functions computed through them; some spaced values and windows are made so too.
_TRANSCENDENTAL = frozenset({
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "logaddexp", "logaddexp2",
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "asin", "acos", "atan", "atan2",
    "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "asinh", "acosh", "atanh",
    "power", "pow", "float_power", "sqrt", "cbrt", "hypot", "deg2rad", "rad2deg", "degrees", "radians",
    "angle", "i0", "sinc", "unwrap", "around", "round", "polyval",
    "linspace", "geomspace", "logspace", "bartlett", "blackman", "hamming", "hanning", "kaiser",
})
# Reductions that only compare, count or select: bit-identical, whatever the dtype.
_SELECTING = frozenset({
    "all", "any", "amax", "amin", "max", "min", "argmax", "argmin", "nanargmax", "nanargmin",
    "nanmax", "nanmin", "ptp", "count_nonzero", "array_equal", "array_equiv", "allclose",
})
# Sorted-value statistics that interpolate between what they select, and binning by computed edges.
_INTERPOLATING = frozenset({
    "median", "nanmedian", "percentile", "nanpercentile", "quantile", "nanquantile", "interp",
    "histogram", "histogram2d", "histogramdd",
})
# Sums and products in another order: exact on integers (which wrap as NumPy's), not on floats.
_ORDERED = frozenset({"reduce", "scan", "matmul"})
# Their results are floats whatever the inputs (a mean divides, a factorisation or a transform
# rounds): they may differ on integer inputs too.
_FLOAT_RESULTS = frozenset({
    "mean", "nanmean", "average", "std", "nanstd", "var", "nanvar", "trapezoid", "corrcoef", "cov",
    "linalg.norm", "linalg.vector_norm", "linalg.matrix_norm", "histogram_bin_edges",
})
# Ufuncs whose ``reduce`` / ``accumulate`` only select (``np.maximum.reduce``).
_SELECTING_UFUNCS = frozenset({
    "maximum", "minimum", "fmax", "fmin", "logical_and", "logical_or", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor",
})


def may_differ(name: str, work: str) -> str:
    """Whether an op's result may differ from NumPy's in the last bits on another target:
    ``"always"``, ``"floats"`` (only where an input is a float or complex array), or ``""``
    (bit-identical everywhere). ``name`` is a catalog name or a ufunc method's (``"add.reduce"``)."""
    base, _, method = name.partition(".") if name.split(".", 1)[0] in _UFUNC_NAMES else (name, "", "")
    if method in ("reduce", "accumulate", "reduceat"):
        return "" if base in _SELECTING_UFUNCS else "floats"
    if base in _TRANSCENDENTAL or name in _INTERPOLATING or name in _FLOAT_RESULTS or work in ("cubic", "fft"):
        return "always"
    if work in _ORDERED and name not in _SELECTING:
        return "floats"
    return ""


_UFUNC_NAMES = frozenset(name for name in NUMPY_CATALOG if "." not in name and NUMPY_CATALOG.work(name) == "map")
