// libFuzzer target for the .kst loader: any bytes must load or be refused with a message, never
// crash, and whatever loads must be a sound graph (printable, verifiable, and written and loaded
// back to the same graph).
#include <cstddef>
#include <cstdint>
#include <string>

#include "format/kst_loader.h"
#include "format/kst_writer.h"
#include "ir/printer.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kestrel;
  auto m = format::load_kst_memory(data, size, "fuzz.kst");
  if (!m.is_ok()) {
    if (m.status().message().empty()) __builtin_trap();
    return 0;
  }
  const std::string text = ir::graph_to_string(*m->graph);
  (void)ir::verify_graph(*m->graph);  // unknown ops are errors here, not crashes
  auto bytes = format::write_kst(*m->graph);
  if (!bytes.is_ok()) __builtin_trap();
  auto again = format::load_kst_memory(bytes->data(), bytes->size(), "rewritten.kst");
  if (!again.is_ok() || ir::graph_to_string(*again->graph) != text) __builtin_trap();
  return 0;
}
