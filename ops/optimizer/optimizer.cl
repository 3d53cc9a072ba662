// The optimizer ops' device kernels, one source for OpenCL C and CUDA
// (see ops/elementwise/elementwise.cl for the conventions): the includer
// defines T, KERNEL(name) and RILL_FN. optimizer_device.cc prepends them
// for OpenCL; optimizer.cu includes this once per element type.
RILL_FN T grad_of(T g, T w, T rs, T clip, T wd) {
  g *= rs;
  if (clip >= (T)0) g = fmin(fmax(g, -clip), clip);
  return g + wd * w;
}

__kernel void KERNEL(sgd)(__global const T* w, ulong w_off, __global const T* g, ulong g_off,
                  __global T* out, ulong out_off, ulong n, T lr, T wd, T rs, T clip) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  T wv = w[w_off + i];
  out[out_off + i] = wv - lr * grad_of(g[g_off + i], wv, rs, clip, wd);
}

__kernel void KERNEL(sgd_mom)(__global const T* w, ulong w_off, __global const T* g, ulong g_off,
                      __global const T* m, ulong m_off, __global T* wo, ulong wo_off,
                      __global T* mo, ulong mo_off, ulong n, T lr, T mom, T wd, T rs, T clip) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  T wv = w[w_off + i];
  T mv = mom * m[m_off + i] - lr * grad_of(g[g_off + i], wv, rs, clip, wd);
  mo[mo_off + i] = mv;
  wo[wo_off + i] = wv + mv;
}

__kernel void KERNEL(adam)(__global const T* w, ulong w_off, __global const T* g, ulong g_off,
                   __global const T* m, ulong m_off, __global const T* v, ulong v_off,
                   __global T* wo, ulong wo_off, __global T* mo, ulong mo_off,
                   __global T* vo, ulong vo_off, ulong n, T lr, T b1, T b2, T eps, T wd, T rs,
                   T clip) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  T wv = w[w_off + i];
  T gv = grad_of(g[g_off + i], wv, rs, clip, wd);
  T mv = b1 * m[m_off + i] + ((T)1 - b1) * gv;
  T vv = b2 * v[v_off + i] + ((T)1 - b2) * gv * gv;
  mo[mo_off + i] = mv;
  vo[vo_off + i] = vv;
  wo[wo_off + i] = wv - lr * mv / (sqrt(vv) + eps);
}
