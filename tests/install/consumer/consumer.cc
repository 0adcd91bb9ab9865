// Install-test consumer of the C++ API (built as C++17 to check the public header does not need
// C++20): runs the test model (y = relu(x + c)) on ones and checks y.
#include <cstdio>
#include <kestrel/kestrel.hpp>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL.onnx\n", argv[0]);
    return 2;
  }
  try {
    kestrel::Session s = kestrel::Session::open(argv[1]);
    std::printf("kestrel %s (C++ API): input %s %s\n", kestrel::version(), s.inputs()[0].name.c_str(),
                s.inputs()[0].shape_string().c_str());
    auto x = kestrel::Tensor::from_vector<float>(kestrel::DType::kF32, {2, 3}, std::vector<float>(6, 1.0f));
    auto out = s.run({{"x", x}});
    const float* y = out.at("y").data<float>();
    const float want[6] = {2, 0, 4, 2, 0, 4};
    bool ok = true;
    std::printf("y =");
    for (int i = 0; i < 6; ++i) {
      std::printf(" %g", y[i]);
      ok = ok && y[i] == want[i];
    }
    std::printf("\n");
    return ok ? 0 : 1;
  } catch (const kestrel::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
