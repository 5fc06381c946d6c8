// The comparison encoder with the project's flags (JSON_DIAGNOSTICS=1 from mcastd_options).
#define BENCH_NLOHMANN_NS diag
#include "bench_json_nlohmann.inc"
