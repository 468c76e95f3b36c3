// libFuzzer's driver entry point. SwiftPM gives every executable its own `main`, so the
// fuzz targets cannot use libFuzzer's; they call this from their main.swift instead.
#ifndef C_LIB_FUZZER_H
#define C_LIB_FUZZER_H
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
