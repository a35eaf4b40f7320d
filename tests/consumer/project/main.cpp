// Prints, each followed by a NUL: the path of the loaded host JIT library, how many kernels it
// embeds, this program's embedded headers (ops, reduce), then the run-time source of each catalog
// kernel named on the command line.
#include <dlfcn.h>

#include <cstdio>
#include <string>
#include <string_view>

#include <metal_jit/registry.h>

namespace consumer::kernels {
const char* ops();
const char* reduce();
}  // namespace consumer::kernels

static void put(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\0', stdout);
}

int main(int argc, char** argv) {
  // A family name is a literal inside the library: the object holding it is the library loaded.
  Dl_info info{};
  const bool found = metal_jit::family_count() > 0 &&
                     dladdr(metal_jit::family_name(0).data(), &info) != 0 && info.dli_fname;
  put(found ? info.dli_fname : "");
  put(std::to_string(metal_jit::kernel_count()));
  put(consumer::kernels::ops());
  put(consumer::kernels::reduce());
  for (int i = 1; i < argc; ++i) {
    auto source = metal_jit::source_for(argv[i]);
    if (!source) {
      std::fprintf(stderr, "consumer: no kernel named %s in the JIT library\n", argv[i]);
      return 1;
    }
    put(*source);
  }
  return 0;
}
