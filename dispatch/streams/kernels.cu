// NumPy's Generator(PCG64) streams, drawn in parallel: see kernels.py for the passes.
typedef unsigned long long u64;
typedef unsigned int u32;
struct u128 { u64 hi, lo; };

__device__ __forceinline__ u128 mul128(u128 a, u128 b) {
    u128 r; r.lo = a.lo * b.lo; r.hi = __umul64hi(a.lo, b.lo) + a.lo * b.hi + a.hi * b.lo; return r;
}
__device__ __forceinline__ u128 add128(u128 a, u128 b) {
    u128 r; r.lo = a.lo + b.lo; r.hi = a.hi + b.hi + (r.lo < a.lo ? 1ULL : 0ULL); return r;
}
__device__ __forceinline__ u128 step(u128 s, u128 m, u128 c) { return add128(mul128(s, m), c); }
__device__ __forceinline__ u64 output(u128 s) {
    u64 x = s.hi ^ s.lo; unsigned rot = (unsigned)(s.hi >> 58);
    return (x >> rot) | (x << ((64u - rot) & 63u));
}

#define ACCEPT 0x40
#define TAIL 0x80
#define TAIL_TRIES 16

struct Gen {  // the LCG and where a thread is in it
    u128 mult, inc, s;
    __device__ u64 next64() { s = step(s, mult, inc); return output(s); }
};

struct Args {
    u64 s_hi, s_lo, inc_hi, inc_lo, strm_hi, strm_lo, strp_hi, strp_lo;
    long long n_pos, n_words;
    u64 rng, thr, mask;
    u32 has32, uinteger;
    long long rare_cap;
};

__device__ Gen start(const Args& a, const u64* jt, long long w) {
    // the state after w + 1 steps: one jump through the table of the LCG's powers
    Gen g; g.mult.hi = 0x2360ED051FC65DA4ULL; g.mult.lo = 0x4385DF649FCCF645ULL;
    g.inc.hi = a.inc_hi; g.inc.lo = a.inc_lo;
    u128 am = {0, 1}, ap = {0, 0};
    u64 d = (u64)w + 1;
    for (int i = 0; d; ++i, d >>= 1) {
        if (d & 1) {
            u128 m = {jt[4 * i], jt[4 * i + 1]}, p = {jt[4 * i + 2], jt[4 * i + 3]};
            am = mul128(am, m); ap = add128(mul128(ap, m), p);
        }
    }
    u128 s = {a.s_hi, a.s_lo};
    g.s = add128(mul128(am, s), ap);
    return g;
}

__device__ __forceinline__ double next_double(u64 r) { return (double)(r >> 11) * (1.0 / 9007199254740992.0); }
__device__ __forceinline__ float next_float(u32 r) { return (float)(r >> 8) * (1.0f / 16777216.0f); }
__device__ __forceinline__ bool close64(double a, double b, double margin) {
    return fabs(a - b) <= fmax(fabs(a), fabs(b)) * margin;
}

// A cursor over a 32-bit stream: the halves of successive words, low first.
struct Cur32 {
    Gen g; u64 word; int half;  // half: which half of `word` the cursor is at
    __device__ u32 next() {
        if (half == 0) { half = 1; return (u32)(word >> 32); }
        word = g.next64(); half = 0; return (u32)word;
    }
};

__device__ void mark_rare(long long p, long long* rare, unsigned long long* counters, long long cap) {
    unsigned long long i = atomicAdd(&counters[0], 1ULL);
    if ((long long)i < cap) rare[i] = p;
}

// ---- float64 methods on 64-bit draws: r is the draw at p, g sits at p ----

__device__ unsigned char normal64(u64 r, Gen g, const double* zt, double& val, bool& rare) {
    const double* wi = zt; const double* fi = zt + 256; const u64* ki = (const u64*)(zt + 512);
    int idx = (int)(r & 0xff); r >>= 8;
    u64 rabs = (r >> 1) & 0x000fffffffffffffULL;
    double x = (double)rabs * wi[idx];
    if (r & 1) x = -x;
    val = x;
    if (rabs < ki[idx]) return 1 | ACCEPT;
    if (idx == 0) {
        for (int t = 0; t < TAIL_TRIES; ++t) {
            double ua = next_double(g.next64()), ub = next_double(g.next64());
            double xx = -0.27366123732975827203338247596 * log1p(-ua), yy = -log1p(-ub);
            double lhs = yy + yy, rhs = xx * xx;
            if (close64(lhs, rhs, MARGIN64)) { rare = true; return 1; }
            if (lhs > rhs) { val = ((rabs >> 8) & 1) ? -ua : ua; return (unsigned char)(3 + 2 * t) | ACCEPT | TAIL; }
        }
        rare = true; return 1;
    }
    double u = next_double(g.next64());
    double lhs = (fi[idx - 1] - fi[idx]) * u + fi[idx], rhs = exp(-0.5 * x * x);
    if (close64(lhs, rhs, MARGIN64)) rare = true;
    return 2 | (lhs < rhs ? ACCEPT : 0);
}

__device__ unsigned char exponential64(u64 r, Gen g, const double* zt, double& val, bool& rare) {
    const double* we = zt; const double* fe = zt + 256; const u64* ke = (const u64*)(zt + 512);
    u64 ri = r >> 3; int idx = (int)(ri & 0xff); ri >>= 8;
    double x = (double)ri * we[idx];
    val = x;
    if (ri < ke[idx]) return 1 | ACCEPT;
    double u = next_double(g.next64());
    if (idx == 0) { val = u; return 2 | ACCEPT | TAIL; }
    double lhs = (fe[idx - 1] - fe[idx]) * u + fe[idx], rhs = exp(-x);
    if (close64(lhs, rhs, MARGIN64)) rare = true;
    return 2 | (lhs < rhs ? ACCEPT : 0);
}

// ---- float32 methods on 32-bit draws: r is the draw at p, c sits at p ----

__device__ unsigned char normal32(u32 r, Cur32 c, const float* zt, float& val, bool& rare) {
    const float* wi = zt; const float* fi = zt + 256; const u32* ki = (const u32*)(zt + 512);
    int idx = (int)(r & 0xff);
    u32 rabs = (r >> 9) & 0x0007fffff;
    float x = (float)rabs * wi[idx];
    if ((r >> 8) & 1) x = -x;
    val = x;
    if (rabs < ki[idx]) return 1 | ACCEPT;
    if (idx == 0) {
        for (int t = 0; t < TAIL_TRIES; ++t) {
            float ua = next_float(c.next()), ub = next_float(c.next());
            float xx = -0.27366123732975827203338247596f * log1pf(-ua), yy = -log1pf(-ub);
            float lhs = yy + yy, rhs = xx * xx;
            if (close64(lhs, rhs, MARGIN32_TAIL)) { rare = true; return 1; }
            if (lhs > rhs) { val = ((rabs >> 8) & 1) ? -ua : ua; return (unsigned char)(3 + 2 * t) | ACCEPT | TAIL; }
        }
        rare = true; return 1;
    }
    float u = next_float(c.next());
    float lhs = (fi[idx - 1] - fi[idx]) * u + fi[idx];
    double rhs = exp(-0.5 * (double)x * (double)x);
    if (close64((double)lhs, rhs, MARGIN64)) rare = true;
    return 2 | ((double)lhs < rhs ? ACCEPT : 0);
}

__device__ unsigned char exponential32(u32 r, Cur32 c, const float* zt, float& val, bool& rare) {
    const float* we = zt; const float* fe = zt + 256; const u32* ke = (const u32*)(zt + 512);
    u32 ri = r >> 1; int idx = (int)(ri & 0xff); ri >>= 8;
    float x = (float)ri * we[idx];
    val = x;
    if (ri < ke[idx]) return 1 | ACCEPT;
    float u = next_float(c.next());
    if (idx == 0) { val = u; return 2 | ACCEPT | TAIL; }
    float lhs = (fe[idx - 1] - fe[idx]) * u + fe[idx], rhs = expf(-x);
    if (close64(lhs, rhs, MARGIN32)) rare = true;
    return 2 | (lhs < rhs ? ACCEPT : 0);
}

// ---- the attempts kernels ----

#define LOOP_WORDS \
    const Args a = *ap; \
    long long T = (long long)gridDim.x * blockDim.x, t = (long long)blockIdx.x * blockDim.x + threadIdx.x; \
    if (t >= a.n_words) return; \
    Gen g = start(a, jt, t); \
    u128 sm = {a.strm_hi, a.strm_lo}, sp = {a.strp_hi, a.strp_lo}; \
    unsigned kmax = 1; \
    for (long long w = t; w < a.n_words; w += T, g.s = step(g.s, sm, sp))

#define FINISH atomicMax((unsigned int*)&counters[1], kmax);

extern "C" __global__ void attempts_f64(const Args* ap, const u64* jt, const double* zt, int method,
                                        unsigned char* code, double* value, long long* rare,
                                        unsigned long long* counters) {
    LOOP_WORDS {
        u64 r = output(g.s);
        double v = 0; bool rr = false;
        unsigned char c = method == 0 ? (unsigned char)(1 | ACCEPT) : method == 1 ? normal64(r, g, zt, v, rr) : exponential64(r, g, zt, v, rr);
        if (method == 0) v = next_double(r);
        if (rr) { mark_rare(w, rare, counters, a.rare_cap); c = 1; }
        code[w] = c; value[w] = v;
        kmax = max(kmax, (unsigned)(c & 0x3f));
    }
    FINISH
}

// Position j of a 32-bit stream: the buffered half (j = 0) if there is one, then halves.
__device__ void one32(long long j, u32 r, Cur32 c, const float* zt, int method, unsigned char* code,
                      float* value, long long* rare, unsigned long long* counters, long long cap, unsigned& kmax) {
    float v = 0; bool rr = false;
    unsigned char cc;
    if (method == 0) { cc = 1 | ACCEPT; v = next_float(r); }
    else if (method == 1) cc = normal32(r, c, zt, v, rr);
    else cc = exponential32(r, c, zt, v, rr);
    if (rr) { mark_rare(j, rare, counters, cap); cc = 1; }
    code[j] = cc; value[j] = v;
    kmax = max(kmax, (unsigned)(cc & 0x3f));
}

extern "C" __global__ void attempts_f32(const Args* ap, const u64* jt, const float* zt, int method,
                                        unsigned char* code, float* value, long long* rare,
                                        unsigned long long* counters) {
    LOOP_WORDS {
        if (w == 0 && a.has32) {  // NumPy's buffered half comes first
            Cur32 c0; c0.g = g; c0.g.s.hi = a.s_hi; c0.g.s.lo = a.s_lo; c0.word = 0; c0.half = 1;
            one32(0, a.uinteger, c0, zt, method, code, value, rare, counters, a.rare_cap, kmax);
        }
        u64 word = output(g.s);
        long long j = (long long)a.has32 + 2 * w;
        Cur32 c; c.g = g; c.word = word; c.half = 0;
        if (j < a.n_pos) one32(j, (u32)word, c, zt, method, code, value, rare, counters, a.rare_cap, kmax);
        c.half = 1;
        if (j + 1 < a.n_pos) one32(j + 1, (u32)(word >> 32), c, zt, method, code, value, rare, counters, a.rare_cap, kmax);
    }
    FINISH
}

// Bounded integers: every draw is an attempt of one draw.
template <typename V, typename D>
__device__ __forceinline__ void bounded(long long q, D u, int kind, int bits, const Args& a, unsigned char* code, V* value) {
    unsigned char ok = 1; V v;
    if (kind == 0) { v = (V)u; }
    else if (kind == 1) { D m = u & (D)a.mask; ok = (u64)m <= a.rng; v = (V)m; }
    else if (bits == 64) { u64 hi = __umul64hi((u64)u, a.rng + 1), lo = (u64)u * (a.rng + 1); ok = lo >= a.thr; v = (V)hi; }
    else { u64 m = (u64)u * (a.rng + 1); ok = (m & ((1ULL << bits) - 1)) >= a.thr; v = (V)(m >> bits); }
    code[q] = 1 | (ok ? ACCEPT : 0); value[q] = v;
}

template <typename V>
__device__ void sub32(long long j, u32 word32, int kind, int bits, int split, const Args& a, unsigned char* code, V* value) {
    for (int s = 0; s < split; ++s) {
        long long q = j * split + s;
        if (q >= a.n_pos) return;
        u32 sub = split == 1 ? word32 : (word32 >> (s * bits)) & ((1u << bits) - 1u);
        bounded<V, u32>(q, sub, kind, bits, a, code, value);
    }
}

template <typename V>
__device__ void attempts_int(const Args* ap, const u64* jt, int kind, int bits, unsigned char* code, V* value,
                             unsigned long long* counters) {
    int split = bits >= 32 ? 1 : 32 / bits;
    LOOP_WORDS {
        u64 r = output(g.s);
        if (bits == 64) { bounded<V, u64>(w, r, kind, bits, a, code, value); continue; }
        if (w == 0 && a.has32) sub32<V>(0, a.uinteger, kind, bits, split, a, code, value);
        long long j = (long long)a.has32 + 2 * w;
        sub32<V>(j, (u32)r, kind, bits, split, a, code, value);
        sub32<V>(j + 1, (u32)(r >> 32), kind, bits, split, a, code, value);
    }
    FINISH
}

extern "C" __global__ void attempts_u64(const Args* ap, const u64* jt, int kind, int bits, unsigned char* code, u64* value, unsigned long long* counters) { attempts_int<u64>(ap, jt, kind, bits, code, value, counters); }
extern "C" __global__ void attempts_u32(const Args* ap, const u64* jt, int kind, int bits, unsigned char* code, u32* value, unsigned long long* counters) { attempts_int<u32>(ap, jt, kind, bits, code, value, counters); }
extern "C" __global__ void attempts_u16(const Args* ap, const u64* jt, int kind, int bits, unsigned char* code, unsigned short* value, unsigned long long* counters) { attempts_int<unsigned short>(ap, jt, kind, bits, code, value, counters); }
extern "C" __global__ void attempts_u8(const Args* ap, const u64* jt, int kind, int bits, unsigned char* code, unsigned char* value, unsigned long long* counters) { attempts_int<unsigned char>(ap, jt, kind, bits, code, value, counters); }

// ---- which positions the loop visits (scan.chain_starts, one thread per position) ----

extern "C" __global__ void take_kernel(const unsigned char* code, long long n, int kmax, int* take) {
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    long long s = p;
    for (;; --s) {  // the last sync point at or before p
        bool sync = true;
        for (int j = 1; j < kmax && j <= s; ++j) if ((code[s - j] & 0x3f) > j) { sync = false; break; }
        if (sync) break;
    }
    while (s < p) s += code[s] & 0x3f;
    take[p] = (s == p && (code[p] & ACCEPT)) ? 1 : 0;
}

template <typename V, typename I>
__device__ void scatter_impl(const unsigned char* code, const V* value, const int* take, const I* cs, long long n_pos,
                             long long n, V* out, long long* tails, unsigned long long* counters, long long cap) {
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n_pos || !take[p]) return;
    long long i = (long long)cs[p] - 1;
    if (i >= n) return;
    out[i] = value[p];
    if (code[p] & TAIL) { unsigned long long c = atomicAdd(&counters[0], 1ULL); if ((long long)c < cap) tails[c] = i; }
    if (i == n - 1) counters[1] = (unsigned long long)(p + (code[p] & 0x3f));
}
