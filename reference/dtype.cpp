#include "reference/dtype.hpp"

#include "reference/error.hpp"

namespace kbit {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "fp32";
    case DType::f16:
      return "fp16";
    case DType::bf16:
      return "bf16";
  }
  return "?";
}

std::size_t dtype_size(DType t) {
  return t == DType::f32 ? 4 : 2;
}

DType parse_dtype(std::string_view s) {
  if (s == "fp32" || s == "f32" || s == "float32") return DType::f32;
  if (s == "fp16" || s == "f16" || s == "float16" || s == "half") return DType::f16;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  throw Error("dtype '" + std::string(s) + "' is not one of fp32, fp16, bf16");
}

}  // namespace kbit
