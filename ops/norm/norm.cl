// layer_norm's device kernel, one source for OpenCL C and CUDA (as
// elementwise.cl: the includer defines T, KERNEL(name) and RILL_FN). One
// work-item per row of `cols` elements: mean, then the variance of the
// differences, then the normalized, scaled and shifted row.

__kernel void KERNEL(layer_norm)(__global const T* x, ulong x_off, __global const T* g,
                                 ulong g_off, __global const T* b, ulong b_off, __global T* y,
                                 ulong y_off, ulong rows, ulong cols, T eps) {
  ulong r = get_global_id(0);
  if (r >= rows) return;
  ulong base = r * cols;
  T mean = (T)0;
  for (ulong i = 0; i < cols; ++i) mean += x[x_off + base + i];
  mean /= (T)cols;
  T var = (T)0;
  for (ulong i = 0; i < cols; ++i) {
    T d = x[x_off + base + i] - mean;
    var += d * d;
  }
  var /= (T)cols;
  T inv = (T)1 / sqrt(var + eps);
  for (ulong i = 0; i < cols; ++i) {
    y[y_off + base + i] = (x[x_off + base + i] - mean) * inv * g[g_off + i] + b[b_off + i];
  }
}
