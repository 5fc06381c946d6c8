// The comparison encoder without JSON_DIAGNOSTICS (no parent pointers to maintain).
#undef JSON_DIAGNOSTICS
#define JSON_DIAGNOSTICS 0
#define BENCH_NLOHMANN_NS nodiag
#include "bench_json_nlohmann.inc"
