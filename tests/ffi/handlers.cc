// Test handlers for spec's FFI call frame, written against XLA's FFI API
// exactly as a user library would be; tests/ffi runs them on spec and on JAX.

#include <cstdint>
#include <memory>
#include <string_view>

#include "xla/ffi/api/c_api.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

// Writes its attributes into a float64 result: [i, f, len(s), sum(arr),
// d["a"], b].
ffi::Error AttrEchoImpl(int64_t i, double f, std::string_view s,
                        ffi::Span<const int64_t> arr, ffi::Dictionary d,
                        bool b, ffi::ResultBuffer<ffi::F64> out) {
  if (out->element_count() != 6) {
    return ffi::Error::InvalidArgument("AttrEcho needs 6 result elements");
  }
  double total = 0;
  for (int64_t v : arr) total += double(v);
  auto a = d.get<int64_t>("a");
  if (a.has_error()) return a.error();
  double* o = out->typed_data();
  o[0] = double(i);
  o[1] = f;
  o[2] = double(s.size());
  o[3] = total;
  o[4] = double(*a);
  o[5] = b ? 1.0 : 0.0;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(AttrEcho, AttrEchoImpl,
                              ffi::Ffi::Bind()
                                  .Attr<int64_t>("i")
                                  .Attr<double>("f")
                                  .Attr<std::string_view>("s")
                                  .Attr<ffi::Span<const int64_t>>("arr")
                                  .Attr<ffi::Dictionary>("d")
                                  .Attr<bool>("b")
                                  .Ret<ffi::Buffer<ffi::F64>>());

// Fails with the error code and message it is given.
ffi::Error FailImpl(std::string_view message, ffi::AnyBuffer x,
                    ffi::Result<ffi::AnyBuffer> y) {
  return ffi::Error(ffi::ErrorCode::kFailedPrecondition, std::string(message));
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Fail, FailImpl,
                              ffi::Ffi::Bind()
                                  .Attr<std::string_view>("message")
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>());

// y = x + 1 for float32 and float64 buffers of any shape (dtype dispatch on
// an AnyBuffer, as the page's "Advanced topics" describes).
template <typename T>
void AddOneTyped(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y) {
  const T* in = x.typed_data<T>();
  T* out = y->typed_data<T>();
  for (size_t n = 0; n < x.element_count(); ++n) out[n] = in[n] + T(1);
}

ffi::Error AddOneImpl(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y) {
  if (x.element_type() != y->element_type()) {
    return ffi::Error::InvalidArgument("AddOne: result dtype differs");
  }
  switch (x.element_type()) {
    case ffi::F32: AddOneTyped<float>(x, y); break;
    case ffi::F64: AddOneTyped<double>(x, y); break;
    default: return ffi::Error::InvalidArgument("AddOne: unsupported dtype");
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(AddOne, AddOneImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>());

// Counts its calls (a side effect) and returns the new count.
static int64_t call_count = 0;

ffi::Error CountImpl(ffi::ResultBuffer<ffi::S64> out) {
  out->typed_data()[0] = ++call_count;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Count, CountImpl,
                              ffi::Ffi::Bind().Ret<ffi::Buffer<ffi::S64>>());

extern "C" int64_t CallCount() { return call_count; }

// The shape it was called with: out = [rank, dims...] (padded with -1 to 4).
ffi::Error ShapeOfImpl(ffi::AnyBuffer x, ffi::ResultBuffer<ffi::S64> out) {
  auto dims = x.dimensions();
  int64_t* o = out->typed_data();
  o[0] = dims.size();
  for (int k = 0; k < 4; ++k) o[k + 1] = k < (int)dims.size() ? dims[k] : -1;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(ShapeOf, ShapeOfImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::Buffer<ffi::S64>>());

// XLA's struct sizes as these headers define them (for spec's layout check).
extern "C" int64_t StructSize(int which) {
  switch (which) {
    case 0: return XLA_FFI_CallFrame_STRUCT_SIZE;
    case 1: return XLA_FFI_Api_STRUCT_SIZE;
    case 2: return XLA_FFI_Buffer_STRUCT_SIZE;
    case 3: return XLA_FFI_Args_STRUCT_SIZE;
    case 4: return XLA_FFI_Attrs_STRUCT_SIZE;
    case 5: return XLA_FFI_Metadata_STRUCT_SIZE;
    case 6: return XLA_FFI_Metadata_Extension_STRUCT_SIZE;
    case 7: return XLA_FFI_Error_Create_Args_STRUCT_SIZE;
    case 8: return sizeof(XLA_FFI_Scalar);
    case 9: return sizeof(XLA_FFI_Array);
    default: return -1;
  }
}

// The original CPU custom-call convention (custom_call_api_version=1):
// out = in[0] + in[1] elementwise over 4 float32s.
extern "C" void LegacyAdd(void* out, const void** in) {
  const float* a = static_cast<const float*>(in[0]);
  const float* b = static_cast<const float*>(in[1]);
  float* o = static_cast<float*>(out);
  for (int n = 0; n < 4; ++n) o[n] = a[n] + b[n];
}

// The runtime's aliasing: an aliased result is its input's buffer.
ffi::Error AliasingImpl(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y) {
  if (x.untyped_data() != y->untyped_data()) {
    return ffi::Error::InvalidArgument("aliased buffers differ");
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Aliasing, AliasingImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>());

// All attributes as one dictionary: out = [number of attributes, "secret"].
ffi::Error DictAttrsImpl(ffi::Dictionary attrs, ffi::ResultBuffer<ffi::S64> out) {
  auto secret = attrs.get<int64_t>("secret");
  if (secret.has_error()) return secret.error();
  out->typed_data()[0] = attrs.size();
  out->typed_data()[1] = *secret;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(DictAttrs, DictAttrsImpl,
                              ffi::Ffi::Bind().Attrs().Ret<ffi::Buffer<ffi::S64>>());

// A stateful handler: instantiation makes the state from an attribute, the
// execution reads it (state, registered type, deleter).
struct CounterState {
  static ffi::TypeId id;
  explicit CounterState(int64_t start) : value(start) {}
  int64_t value;
};

ffi::TypeId CounterState::id = {};
static int64_t states_deleted = 0;

extern "C" XLA_FFI_TypeId* CounterStateTypeId() { return &CounterState::id; }

extern "C" const XLA_FFI_TypeInfo* CounterStateTypeInfo() {
  static const XLA_FFI_TypeInfo info = {
      XLA_FFI_TypeInfo_STRUCT_SIZE, nullptr, [](void* state) {
        ++states_deleted;
        delete static_cast<CounterState*>(state);
      }};
  return &info;
}

extern "C" int64_t StatesDeleted() { return states_deleted; }

static ffi::ErrorOr<std::unique_ptr<CounterState>> StatefulInit(int64_t start) {
  return std::make_unique<CounterState>(start);
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(StatefulInstantiate, StatefulInit,
                              ffi::Ffi::BindInstantiate().Attr<int64_t>("start"));

static ffi::Error StatefulRun(CounterState* state, ffi::ResultBuffer<ffi::S64> out) {
  out->typed_data()[0] = state->value++;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(StatefulExecute, StatefulRun,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::State<CounterState>>()
                                  .Ret<ffi::Buffer<ffi::S64>>());
