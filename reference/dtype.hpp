// Element types of activations, outputs and dequantized weights.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace kbit {

enum class DType { f32, f16, bf16 };

const char* dtype_name(DType t);
std::size_t dtype_size(DType t);
// Accepts "fp32"/"f32"/"float32", "fp16"/"f16"/"float16"/"half", "bf16"/"bfloat16".
DType parse_dtype(std::string_view s);

}  // namespace kbit
