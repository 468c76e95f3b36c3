// Declarations only; the symbol comes from libFuzzer (-sanitize=fuzzer).
#include "CLibFuzzer.h"
