// Writes the install test's model: y = relu(x + c), x f32[2,3], c = [1,-2,3].
#include <cstdio>
#include <fstream>

#include "common/onnx_builder.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.onnx\n", argv[0]);
    return 2;
  }
  kestrel::testing::OnnxBuilder b;
  b.input("x", 1, {2, 3}).initializer_f32("c", {3}, {1, -2, 3});
  b.node("Add", {"x", "c"}, {"s"});
  b.node("Relu", {"s"}, {"y"});
  b.output("y");
  std::ofstream f(argv[1], std::ios::binary);
  std::string bytes = b.bytes();
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return f ? 0 : 1;
}
