// KBIT_CUBLAS_CHECK: a cuBLAS call whose status is not CUBLAS_STATUS_SUCCESS throws kbit::Error
// naming the call, the status and the place (the cuBLAS baselines, the harness's tensor rate).
#pragma once
#include <cublas_v2.h>

#include <string>

#include "reference/error.hpp"

#define KBIT_CUBLAS_CHECK(call)                                                              \
  do {                                                                                       \
    const cublasStatus_t kbit_st_ = (call);                                                  \
    if (kbit_st_ != CUBLAS_STATUS_SUCCESS) {                                                 \
      throw ::kbit::Error(std::string(#call) + " failed: " + cublasGetStatusName(kbit_st_) + \
                          " at " + __FILE__ + ":" + std::to_string(__LINE__));               \
    }                                                                                        \
  } while (0)
