// The one exception type of the project: every bad input becomes a kbit::Error whose
// message names the offending value and the limit it broke.
#pragma once
#include <stdexcept>
#include <string>

namespace kbit {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace kbit
