// CUDA kernels of the optimizer ops (optimizer_device.cc launches them; its
// OpenCL source spells the same formulas). Entries per type: sgd_f32, ...
#include <cstdint>

namespace {

__device__ uint64_t GlobalId() { return uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; }

template <typename T>
__device__ T GradOf(T g, T w, T rs, T clip, T wd) {
  g *= rs;
  if (clip >= T(0)) g = fmin(fmax(g, -clip), clip);
  return g + wd * w;
}

template <typename T>
__device__ void Sgd(const T* w, uint64_t w_off, const T* g, uint64_t g_off, T* out,
                    uint64_t out_off, uint64_t n, T lr, T wd, T rs, T clip) {
  uint64_t i = GlobalId();
  if (i >= n) return;
  T wv = w[w_off + i];
  out[out_off + i] = wv - lr * GradOf<T>(g[g_off + i], wv, rs, clip, wd);
}

template <typename T>
__device__ void SgdMom(const T* w, uint64_t w_off, const T* g, uint64_t g_off, const T* m,
                       uint64_t m_off, T* wo, uint64_t wo_off, T* mo, uint64_t mo_off, uint64_t n,
                       T lr, T mom, T wd, T rs, T clip) {
  uint64_t i = GlobalId();
  if (i >= n) return;
  T wv = w[w_off + i];
  T mv = mom * m[m_off + i] - lr * GradOf<T>(g[g_off + i], wv, rs, clip, wd);
  mo[mo_off + i] = mv;
  wo[wo_off + i] = wv + mv;
}

template <typename T>
__device__ void Adam(const T* w, uint64_t w_off, const T* g, uint64_t g_off, const T* m,
                     uint64_t m_off, const T* v, uint64_t v_off, T* wo, uint64_t wo_off, T* mo,
                     uint64_t mo_off, T* vo, uint64_t vo_off, uint64_t n, T lr, T b1, T b2, T eps,
                     T wd, T rs, T clip) {
  uint64_t i = GlobalId();
  if (i >= n) return;
  T wv = w[w_off + i];
  T gv = GradOf<T>(g[g_off + i], wv, rs, clip, wd);
  T mv = b1 * m[m_off + i] + (T(1) - b1) * gv;
  T vv = b2 * v[v_off + i] + (T(1) - b2) * gv * gv;
  mo[mo_off + i] = mv;
  vo[vo_off + i] = vv;
  wo[wo_off + i] = wv - lr * mv / (sqrt(vv) + eps);
}

}  // namespace

#define RILL_OPTIMIZER_ENTRIES(T, S)                                                               \
  extern "C" __global__ void sgd_##S(const T* w, uint64_t w_off, const T* g, uint64_t g_off,       \
                                     T* out, uint64_t out_off, uint64_t n, T lr, T wd, T rs,       \
                                     T clip) {                                                     \
    Sgd<T>(w, w_off, g, g_off, out, out_off, n, lr, wd, rs, clip);                                 \
  }                                                                                                \
  extern "C" __global__ void sgd_mom_##S(                                                          \
      const T* w, uint64_t w_off, const T* g, uint64_t g_off, const T* m, uint64_t m_off, T* wo,   \
      uint64_t wo_off, T* mo, uint64_t mo_off, uint64_t n, T lr, T mom, T wd, T rs, T clip) {      \
    SgdMom<T>(w, w_off, g, g_off, m, m_off, wo, wo_off, mo, mo_off, n, lr, mom, wd, rs, clip);     \
  }                                                                                                \
  extern "C" __global__ void adam_##S(                                                             \
      const T* w, uint64_t w_off, const T* g, uint64_t g_off, const T* m, uint64_t m_off,          \
      const T* v, uint64_t v_off, T* wo, uint64_t wo_off, T* mo, uint64_t mo_off, T* vo,           \
      uint64_t vo_off, uint64_t n, T lr, T b1, T b2, T eps, T wd, T rs, T clip) {                  \
    Adam<T>(w, w_off, g, g_off, m, m_off, v, v_off, wo, wo_off, mo, mo_off, vo, vo_off, n, lr, b1, \
            b2, eps, wd, rs, clip);                                                                \
  }

RILL_OPTIMIZER_ENTRIES(float, f32)
RILL_OPTIMIZER_ENTRIES(double, f64)
