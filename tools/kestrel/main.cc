// kestrel command line: builds the CLI11 app from the subcommands and turns every error into a
// message on stderr and a non-zero exit code.
#include <cstdio>
#include <exception>
#include <new>

#include "commands.h"
#include "kestrel/kestrel.hpp"

int main(int argc, char** argv) {
  CLI::App app{"kestrel: run, inspect and convert neural-network models (ONNX, .kst)", "kestrel"};
  app.set_version_flag("--version", kestrel::version());
  app.require_subcommand(1);
  app.fallthrough(false);
  kestrel::cli::add_run_command(app);
  kestrel::cli::add_inspect_command(app);
  kestrel::cli::add_bench_command(app);
  kestrel::cli::add_convert_command(app);
  kestrel::cli::add_quantize_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);  // prints usage errors (or --help) itself
  } catch (const kestrel::Error& e) {
    std::fprintf(stderr, "kestrel: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "kestrel: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kestrel: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
