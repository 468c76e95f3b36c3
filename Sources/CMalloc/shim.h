// glibc's malloc tuning (mallopt, M_MMAP_THRESHOLD) for Swift: <malloc.h> is not part of the
// Glibc module. The node uses it once at startup (Sources/Node/LargeAllocations.swift).
#ifndef ESTUARY_CMALLOC_SHIM_H
#define ESTUARY_CMALLOC_SHIM_H

#include <malloc.h>

#endif
