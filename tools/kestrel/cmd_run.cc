// `kestrel run`: runs a model on .npy inputs (or random ones), prints a summary of each output
// and optionally writes the outputs as .npy files.
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "core/str_util.h"

namespace kestrel::cli {

namespace {

using core::str_cat;

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::vector<std::string> shapes;  // NAME=1x3x224x224 (random inputs)
  std::string output_dir;
  int threads = 1;
  uint64_t seed = 0;
  bool reference = false;
};

const TensorInfo* find_input(const Session& s, const std::string& name) {
  for (const auto& in : s.inputs())
    if (in.name == name) return &in;
  return nullptr;
}

[[noreturn]] void fail_no_such_input(const Session& s, const std::string& name, const std::string& what) {
  std::vector<std::string> names;
  for (const auto& in : s.inputs()) names.push_back("'" + in.name + "'");
  fail(ErrorCode::kInvalidArgument, str_cat(what, ": the model has no input named '", name, "' (inputs: ",
                                            names.empty() ? std::string("none") : core::join(names, ", "), ")"));
}

// The CLI checks what it can before running so that errors name the file the tensor came from.
void check_against_model(const TensorInfo& info, const Tensor& t, const std::string& file) {
  if (info.dtype != DType::kUndefined && t.dtype() != info.dtype)
    fail(ErrorCode::kInvalidArgument,
         str_cat("input '", info.name, "' from ", file, ": the model expects ", dtype_name(info.dtype),
                 info.shape_string(), ", the file holds ", t.type_string()));
  if (!info.rank_known) return;
  bool ok = info.shape.size() == t.shape().size();
  for (size_t d = 0; ok && d < info.shape.size(); ++d)
    if (info.shape[d] >= 0 && info.shape[d] != t.shape()[d]) ok = false;
  if (!ok)
    fail(ErrorCode::kInvalidArgument, str_cat("input '", info.name, "' from ", file, ": the model expects shape ",
                                              info.shape_string(), ", the file holds ", t.type_string()));
}

void run(const RunOptions& o) {
  SessionOptions so;
  so.num_threads = o.threads;
  so.reference_kernels = o.reference;
  Session session = Session::open(o.model, so);

  std::map<std::string, Tensor> feeds;
  std::map<std::string, std::string> sources;  // input name -> where its data came from
  for (const std::string& arg : o.inputs) {
    auto [name, file] = split_assignment(arg, "--input", "NAME=FILE.npy");
    const TensorInfo* info = find_input(session, name);
    if (!info) fail_no_such_input(session, name, str_cat("--input ", arg));
    if (feeds.count(name)) fail(ErrorCode::kInvalidArgument, str_cat("--input: input '", name, "' given twice"));
    Tensor t = read_npy(file);
    check_against_model(*info, t, file);
    feeds[name] = t;
    sources[name] = file;
  }

  std::map<std::string, std::vector<int64_t>> shapes;
  for (const std::string& arg : o.shapes) {
    auto [name, text] = split_assignment(arg, "--shape", "NAME=DIMS (e.g. x=1x3x224x224)");
    if (!find_input(session, name)) fail_no_such_input(session, name, str_cat("--shape ", arg));
    if (feeds.count(name))
      fail(ErrorCode::kInvalidArgument, str_cat("--shape ", arg, ": input '", name, "' already comes from a file"));
    shapes[name] = parse_dims(text, str_cat("--shape ", arg));
  }

  // Inputs without a file get deterministic random data; symbolic or unknown dims default to 1.
  uint64_t index = 0;
  for (const TensorInfo& info : session.inputs()) {
    ++index;
    if (feeds.count(info.name)) continue;
    std::vector<int64_t> dims;
    if (auto it = shapes.find(info.name); it != shapes.end()) {
      dims = it->second;
    } else {
      if (!info.rank_known)
        fail(ErrorCode::kInvalidArgument, str_cat("input '", info.name,
                                                  "' has an unknown rank: give its data with --input or its shape "
                                                  "with --shape ",
                                                  info.name, "=DIMS"));
      for (int64_t d : info.shape) dims.push_back(d >= 0 ? d : 1);
    }
    feeds[info.name] = random_tensor(info.dtype, dims, o.seed * 1000003 + index);
    sources[info.name] = "random";
  }

  for (const TensorInfo& info : session.inputs())
    std::printf("input  %s %s (%s)\n", info.name.c_str(), feeds[info.name].type_string().c_str(),
                sources[info.name].c_str());

  std::map<std::string, Tensor> outputs;
  try {
    outputs = session.run(feeds);
  } catch (const Error& e) {
    throw Error(e.code(), str_cat(o.model, ": run failed: ", e.what()));
  }

  for (const TensorInfo& info : session.outputs()) {
    const Tensor& t = outputs[info.name];
    std::printf("output %s %s %s\n", info.name.c_str(), t.type_string().c_str(), summary_string(summarize(t)).c_str());
  }

  if (!o.output_dir.empty()) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(o.output_dir, ec);
    if (ec || !fs::is_directory(o.output_dir))
      fail(ErrorCode::kIoError,
           str_cat("cannot create output directory '", o.output_dir, "'", ec ? ": " + ec.message() : std::string()));
    std::set<std::string> used;
    for (const TensorInfo& info : session.outputs()) {
      // Two names can sanitize to the same file ("a/b", "a_b"): number the later ones.
      std::string base = safe_file_name(info.name), file = base;
      for (int k = 2; used.count(file); ++k) file = str_cat(base, "_", k);
      used.insert(file);
      std::string path = (fs::path(o.output_dir) / (file + ".npy")).string();
      write_npy(path, outputs[info.name]);
      std::printf("wrote  %s\n", path.c_str());
    }
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand("run", "Run a model and summarize its outputs");
  sub->footer(
      "Inputs not given with --input get deterministic random data of their declared shape (floats in\n"
      "[-1,1), integers in [0,10), bools 0/1); symbolic dims are 1 unless --shape gives the shape.\n"
      "Output files are named after the outputs, with characters other than [A-Za-z0-9._-] replaced by '_'.\n"
      "Example: kestrel run model.onnx --input image=x.npy --output-dir out/");
  sub->add_option("model", o->model, "Model file (.onnx)")->required();
  sub->add_option("-i,--input", o->inputs, "Input data from a .npy file (repeatable)")
      ->type_name("NAME=FILE.npy")
      ->allow_extra_args(false);  // one value per flag, so a positional after it stays the model
  sub->add_option("-s,--shape", o->shapes, "Shape of a random input (repeatable)")
      ->type_name("NAME=1x3x224x224")
      ->allow_extra_args(false);
  sub->add_option("-o,--output-dir", o->output_dir, "Write each output to DIR/<output name>.npy")->type_name("DIR");
  sub->add_option("-t,--threads", o->threads, "Number of threads")->check(CLI::Range(1, 256))->capture_default_str();
  sub->add_option("--seed", o->seed, "Seed for random inputs")->capture_default_str();
  sub->add_flag("--reference", o->reference, "Use the plain reference kernels only");
  sub->callback([o] { run(*o); });
}

}  // namespace kestrel::cli
