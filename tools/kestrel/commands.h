// The kestrel subcommands: each file cmd_<name>.cc adds one subcommand to the app.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace kestrel::cli {

void add_run_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_quantize_command(CLI::App& app);

// --float-math for the commands that open a session (run, bench): SessionOptions::float_math.
inline void add_float_math_option(CLI::App* sub, std::string* value) {
  sub->add_option("--float-math", *value,
                  "Float math of the 1x1 convs: f32, or bf16 where the CPU has AVX512_BF16 (default: what the model "
                  "asks: bf16 in mixed files of `kestrel quantize`, else f32)")
      ->check(CLI::IsMember({"f32", "bf16"}));
}

}  // namespace kestrel::cli
