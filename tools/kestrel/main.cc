// kestrel command line (placeholder until the CLI lands).
#include <cstdio>
int main() { std::puts("kestrel"); return 0; }
