// Loading a model file without optimization.
#include "model_file.h"

#include <fstream>
#include <memory>
#include <sstream>

#include "api/convert.h"
#include "cli_util.h"
#include "core/str_util.h"

namespace kestrel::cli {

using core::str_cat;

runtime::LoadedModel load_unoptimized(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorCode::kIoError, str_cat("cannot open model file '", path, "'"));
  std::ostringstream ss;
  ss << f.rdbuf();
  auto bytes = std::make_shared<const std::string>(ss.str());
  const runtime::ModelLoader* loader = runtime::find_model_loader(*bytes, path);
  if (!loader)
    fail(ErrorCode::kInvalidModel,
         str_cat(path, ": not a model file this build can read (formats: ", runtime::model_loader_names(), ")"));
  runtime::LoadOptions lo;
  lo.opt_level = 0;
  lo.source_path = path;
  auto m = loader->load_file ? loader->load_file(path, lo) : loader->load(bytes, lo);
  api::throw_if_error(m.status());
  return std::move(m).value();
}

}  // namespace kestrel::cli
