// Registry of embedded kernel sources: lookup by host name over the generated kernel table,
// and the C API the Python binding loads.
//
// A unit (a catalog family) has its preamble function, written by the one writer of run-time
// C++ (assembled on first use, inflated when the library was built with COMPRESS), and its
// kernel strings (host names, instantiation arguments), assembled lazily, once
// (std::call_once), from their stored pieces. A lookup then costs one binary search per unit
// plus one string copy; the assembled text lives as long as the library, so preamble()
// returns a string_view and the C API returns borrowed names.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <vector>

#include "metal_jit/embedded.h"
#include "metal_jit/registry.h"

#if METAL_JIT_HAVE_ZLIB
#include <zlib.h>
#endif

namespace METAL_JIT_NAMESPACE {
namespace {

using detail::Piece;
using detail::Unit;

// A unit's kernel strings with what is derived from them on first use: where each
// kernel's name starts (catalog order) and the kernels sorted by name (for binary search).
struct Index {
  std::once_flag once;
  std::string text;
  std::vector<std::uint32_t> offsets;
  std::vector<std::uint32_t> by_name;
  bool ok = false;
};

Index* slots() {
  static const std::unique_ptr<Index[]> table(new Index[detail::unit_table().count + 1]);
  return table.get();
}

bool append_piece(const Piece& piece, std::string& out) {
  if (!piece.compressed) {
    out.append(static_cast<const char*>(piece.data), piece.raw_size);
    return true;
  }
#if METAL_JIT_HAVE_ZLIB
  const std::size_t start = out.size();
  out.resize(start + piece.raw_size);
  uLongf len = piece.raw_size;
  int rc = uncompress(reinterpret_cast<Bytef*>(&out[start]), &len,
                      static_cast<const Bytef*>(piece.data), piece.size);
  return rc == Z_OK && len == piece.raw_size;
#else
  return false;  // built without zlib: compressed data cannot be inflated
#endif
}

const Unit& family_at(std::size_t index) { return detail::unit_table().items[index]; }

// The unit's preamble; nullptr if it failed to inflate.
const std::string* assembled(std::size_t index) {
  const Unit& f = family_at(index);
  const std::string& text = f.preamble();
  return text.size() == f.preamble_size ? &text : nullptr;
}

// The unit's kernel index; nullptr if its strings failed to inflate or are malformed.
const Index* index_of(std::size_t family_index) {
  Index& index = slots()[family_index];
  std::call_once(index.once, [&index, family_index] {
    const Unit& f = family_at(family_index);
    index.text.reserve(f.pool_size);
    bool ok = true;
    for (std::uint32_t i = 0; i < f.pool_piece_count && ok; ++i) {
      ok = append_piece(f.pool[i], index.text);
    }
    if (!ok || index.text.size() != f.pool_size) return;
    index.offsets.reserve(f.kernel_count);
    std::size_t pos = 0;
    for (std::uint32_t k = 0; k < f.kernel_count; ++k) {
      std::size_t name_end = index.text.find('\0', pos);
      std::size_t args_end =
          name_end == std::string::npos ? name_end : index.text.find('\0', name_end + 1);
      if (args_end == std::string::npos) return;
      index.offsets.push_back(static_cast<std::uint32_t>(pos));
      pos = args_end + 1;
    }
    if (pos != index.text.size()) return;
    index.by_name.resize(f.kernel_count);
    std::iota(index.by_name.begin(), index.by_name.end(), 0u);
    const char* base = index.text.data();
    const auto& offsets = index.offsets;
    std::sort(index.by_name.begin(), index.by_name.end(),
              [base, &offsets](std::uint32_t a, std::uint32_t b) {
                return std::strcmp(base + offsets[a], base + offsets[b]) < 0;
              });
    index.ok = true;
  });
  return index.ok ? &index : nullptr;
}

std::ptrdiff_t family_index(std::string_view name) {
  const auto& table = detail::unit_table();
  for (std::size_t i = 0; i < table.count; ++i) {
    if (name == table.items[i].name) return static_cast<std::ptrdiff_t>(i);
  }
  return -1;
}

struct Found {
  std::size_t family;
  const char* host_name;  // in the assembled pool; the arguments follow its NUL
};

// Binary search in each family's by-name permutation (families are few).
bool find_kernel(std::string_view host_name, Found& found) {
  const auto& table = detail::unit_table();
  for (std::size_t f = 0; f < table.count; ++f) {
    if (table.items[f].kernel_count == 0) continue;
    const Index* index = index_of(f);
    if (index == nullptr) continue;
    std::uint32_t lo = 0, hi = static_cast<std::uint32_t>(index->by_name.size());
    while (lo < hi) {
      std::uint32_t mid = lo + (hi - lo) / 2;
      const char* name = index->text.data() + index->offsets[index->by_name[mid]];
      int cmp = std::string_view(name).compare(host_name);
      if (cmp == 0) {
        found = {f, name};
        return true;
      }
      if (cmp < 0) lo = mid + 1; else hi = mid;
    }
  }
  return false;
}

enum class Status { ok = 0, unknown = 1, corrupt = 2 };

Status build_source(std::string_view host_name, std::string& out) {
  Found found{};
  if (!find_kernel(host_name, found)) return Status::unknown;
  const std::string* text = assembled(found.family);
  if (text == nullptr) return Status::corrupt;
  std::string_view args(found.host_name + host_name.size() + 1);
  const char* head = detail::unit_table().line_head;
  out.reserve(text->size() + std::strlen(head) + host_name.size() + args.size() + 5);
  out.append(*text);
  out.append(head).append(host_name).append("\", ").append(args).append(")\n");
  return Status::ok;
}

}  // namespace

std::string_view preamble(std::string_view family) {
  std::ptrdiff_t index = family_index(family);
  const std::string* text = index < 0 ? nullptr : assembled(static_cast<std::size_t>(index));
  return text ? std::string_view(*text) : std::string_view();
}

std::optional<std::string> source_for(std::string_view host_name) {
  std::string out;
  if (build_source(host_name, out) != Status::ok) return std::nullopt;
  return out;
}

std::string_view family_of(std::string_view host_name) {
  Found found{};
  if (!find_kernel(host_name, found)) return {};
  return detail::unit_table().items[found.family].name;
}

std::size_t kernel_count() {
  std::size_t n = 0;
  const auto& table = detail::unit_table();
  for (std::size_t f = 0; f < table.count; ++f) n += table.items[f].kernel_count;
  return n;
}

std::string_view kernel_name(std::size_t index) {
  const auto& table = detail::unit_table();
  for (std::size_t f = 0; f < table.count; ++f) {
    const Unit& family = table.items[f];
    if (index < family.kernel_count) {
      const Index* built = index_of(f);
      return built ? std::string_view(built->text.data() + built->offsets[index])
                   : std::string_view();
    }
    index -= family.kernel_count;
  }
  return {};
}

std::size_t family_count() { return detail::unit_table().count; }

std::string_view family_name(std::size_t index) {
  const auto& table = detail::unit_table();
  return index < table.count ? std::string_view(table.items[index].name) : std::string_view();
}

}  // namespace METAL_JIT_NAMESPACE

namespace mj = METAL_JIT_NAMESPACE;

extern "C" {

std::size_t mbjit_count(void) { return mj::kernel_count(); }

const char* mbjit_name(std::size_t index) {
  std::string_view name = mj::kernel_name(index);
  return name.empty() ? nullptr : name.data();  // host names are NUL-terminated literals
}

const char* mbjit_family(const char* host_name) {
  if (host_name == nullptr) return nullptr;
  std::string_view family = mj::family_of(host_name);
  return family.empty() ? nullptr : family.data();
}

int mbjit_source(const char* host_name, char** out, std::size_t* len) {
  if (host_name == nullptr || out == nullptr) return 1;
  std::string text;
  auto status = mj::build_source(host_name, text);
  if (status != mj::Status::ok) return static_cast<int>(status);
  char* buffer = static_cast<char*>(std::malloc(text.size() + 1));
  if (buffer == nullptr) return 2;
  std::memcpy(buffer, text.c_str(), text.size() + 1);
  *out = buffer;
  if (len != nullptr) *len = text.size();
  return 0;
}

void mbjit_free(char* text) { std::free(text); }

std::size_t mbjit_family_count(void) { return mj::family_count(); }

const char* mbjit_family_name(std::size_t index) {
  std::string_view name = mj::family_name(index);
  return name.empty() ? nullptr : name.data();
}

int mbjit_preamble(const char* family, const char** out, std::size_t* len) {
  if (family == nullptr || out == nullptr) return 1;
  std::ptrdiff_t index = mj::family_index(family);
  if (index < 0) return 1;
  const std::string* text = mj::assembled(static_cast<std::size_t>(index));
  if (text == nullptr) return 2;
  *out = text->c_str();
  if (len != nullptr) *len = text->size();
  return 0;
}

int mbjit_compressed(void) { return mj::detail::unit_table().compressed ? 1 : 0; }

}  // extern "C"
