// The kestrel subcommands: each file cmd_<name>.cc adds one subcommand to the app.
#pragma once

#include <CLI/CLI.hpp>

namespace kestrel::cli {

void add_run_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_quantize_command(CLI::App& app);

}  // namespace kestrel::cli
