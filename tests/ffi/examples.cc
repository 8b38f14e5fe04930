// The handlers of JAX's examples/ffi package (jax_ffi_example: rms_norm and
// cpu_examples), written for the tests without the package's nanobind module:
// the tests load this library with ctypes and register its symbols on spec
// and on JAX. Same bindings (attributes, operands, results) as the example's.

#include <complex>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// ---------------------------------------------------------------- rms_norm
// Each row (the last dimension) is divided by its root mean square; the
// forward pass also returns each row's reciprocal rms, which the backward
// pass reads.

template <typename T>
T NormalizeRow(float eps, int64_t n, const T *x, T *y) {
  T squares = T(0);
  for (int64_t i = 0; i < n; ++i) squares += x[i] * x[i];
  T inv = T(1) / std::sqrt(squares / T(n) + T(eps));
  for (int64_t i = 0; i < n; ++i) y[i] = inv * x[i];
  return inv;
}

template <typename T>
void NormalizeRowBackward(int64_t n, T inv, const T *x, const T *ct_y, T *ct_x) {
  T dot = T(0);
  for (int64_t i = 0; i < n; ++i) dot += x[i] * ct_y[i];
  T factor = dot * inv * inv * inv / T(n);
  for (int64_t i = 0; i < n; ++i) ct_x[i] = inv * ct_y[i] - factor * x[i];
}

// (element count, length of a row); a rank-0 operand has no rows.
std::pair<int64_t, int64_t> Rows(const ffi::AnyBuffer &x) {
  auto dims = x.dimensions();
  if (dims.size() == 0) return {0, 0};
  return {static_cast<int64_t>(x.element_count()), dims.back()};
}

template <typename T>
ffi::Error Forward(float eps, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y, T *inv_out) {
  auto [total, row] = Rows(x);
  if (row == 0) return ffi::Error::InvalidArgument("RmsNorm input must be an array");
  const T *xs = x.typed_data<T>();
  T *ys = y->typed_data<T>();
  for (int64_t start = 0, r = 0; start < total; start += row, ++r) {
    T inv = NormalizeRow(eps, row, xs + start, ys + start);
    if (inv_out != nullptr) inv_out[r] = inv;
  }
  return ffi::Error::Success();
}

template <typename T>
ffi::Error Backward(ffi::AnyBuffer inv, ffi::AnyBuffer x, ffi::AnyBuffer ct_y,
                    ffi::Result<ffi::AnyBuffer> ct_x) {
  auto [total, row] = Rows(x);
  if (row == 0) return ffi::Error::InvalidArgument("RmsNormBwd inputs must be arrays");
  const T *invs = inv.typed_data<T>();
  for (int64_t start = 0, r = 0; start < total; start += row, ++r) {
    NormalizeRowBackward(row, invs[r], x.typed_data<T>() + start,
                         ct_y.typed_data<T>() + start, ct_x->typed_data<T>() + start);
  }
  return ffi::Error::Success();
}

// Calls `run` with a null pointer of the element type of `type`.
template <typename Run>
ffi::Error ByElementType(ffi::DataType type, Run run) {
  switch (type) {
    case ffi::F32: return run(static_cast<float *>(nullptr));
    case ffi::F64: return run(static_cast<double *>(nullptr));
    case ffi::C64: return run(static_cast<std::complex<float> *>(nullptr));
    case ffi::C128: return run(static_cast<std::complex<double> *>(nullptr));
    default: return ffi::Error::InvalidArgument("Unsupported input data type.");
  }
}

ffi::Error RmsNormImpl(float eps, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y) {
  return ByElementType(x.element_type(), [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    return Forward<T>(eps, x, y, nullptr);
  });
}

ffi::Error RmsNormFwdImpl(float eps, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                          ffi::Result<ffi::AnyBuffer> inv) {
  return ByElementType(x.element_type(), [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    return Forward<T>(eps, x, y, inv->typed_data<T>());
  });
}

ffi::Error RmsNormBwdImpl(ffi::AnyBuffer inv, ffi::AnyBuffer x, ffi::AnyBuffer ct_y,
                          ffi::Result<ffi::AnyBuffer> ct_x) {
  return ByElementType(x.element_type(), [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    return Backward<T>(inv, x, ct_y, ct_x);
  });
}

// ------------------------------------------------------------ cpu_examples

// The sum of an array attribute.
ffi::Error ArrayAttrImpl(ffi::Span<const int32_t> array, ffi::ResultBufferR0<ffi::S32> sum) {
  int64_t total = 0;
  for (int32_t v : array) total += v;
  sum->typed_data()[0] = static_cast<int32_t>(total);
  return ffi::Error::Success();
}

// All attributes as one dictionary: its "secret" entry and its size.
ffi::Error DictionaryAttrImpl(ffi::Dictionary attrs, ffi::ResultBufferR0<ffi::S32> secret,
                              ffi::ResultBufferR0<ffi::S32> count) {
  auto value = attrs.get<int64_t>("secret");
  if (value.has_error()) return value.error();
  secret->typed_data()[0] = static_cast<int32_t>(value.value());
  count->typed_data()[0] = static_cast<int32_t>(attrs.size());
  return ffi::Error::Success();
}

// State kept between calls: how many times each index was counted before.
ffi::Error CounterImpl(int64_t index, ffi::ResultBufferR0<ffi::S32> out) {
  static std::mutex lock;
  static std::unordered_map<int64_t, int32_t> seen;
  std::lock_guard<std::mutex> hold(lock);
  auto found = seen.find(index);
  out->typed_data()[0] = found == seen.end() ? (seen[index] = 0) : ++found->second;
  return ffi::Error::Success();
}

// Checks that the result is the operand's buffer (input_output_aliases).
ffi::Error AliasingImpl(ffi::AnyBuffer input, ffi::Result<ffi::AnyBuffer> output) {
  if (input.element_type() != output->element_type() ||
      input.element_count() != output->element_count()) {
    return ffi::Error::InvalidArgument("The input and output data types and sizes must match.");
  }
  if (input.untyped_data() != output->untyped_data()) {
    return ffi::Error::InvalidArgument(
        "When aliased, the input and output buffers should point to the same data.");
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(RmsNorm, RmsNormImpl,
                              ffi::Ffi::Bind().Attr<float>("eps").Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(RmsNormFwd, RmsNormFwdImpl,
                              ffi::Ffi::Bind().Attr<float>("eps").Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(RmsNormBwd, RmsNormBwdImpl,
                              ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(ArrayAttr, ArrayAttrImpl,
                              ffi::Ffi::Bind().Attr<ffi::Span<const int32_t>>("array")
                                  .Ret<ffi::BufferR0<ffi::S32>>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(DictionaryAttr, DictionaryAttrImpl,
                              ffi::Ffi::Bind().Attrs().Ret<ffi::BufferR0<ffi::S32>>()
                                  .Ret<ffi::BufferR0<ffi::S32>>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(Counter, CounterImpl,
                              ffi::Ffi::Bind().Attr<int64_t>("index")
                                  .Ret<ffi::BufferR0<ffi::S32>>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(Aliasing, AliasingImpl,
                              ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>());
