// The one C function Python calls (ctypes, kernel_package/__init__.py): the run-time source of
// an entry file, as metallib_embed_headers embedded it. No C++ type crosses the boundary.
#include <string_view>

namespace kpkg::jit {
std::string_view preamble(std::string_view header);  // written by metallib_embed_headers
}

// The source of entry file `name` ("axpy.metal"), NUL-ended; nullptr for an unknown name.
extern "C" __attribute__((visibility("default"))) const char* kpkg_source(const char* name) {
  if (name == nullptr) {
    return nullptr;
  }
  const std::string_view text = kpkg::jit::preamble(name);
  return text.empty() ? nullptr : text.data();
}
