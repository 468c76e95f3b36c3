// libnats (cnats 3.4, Debian's libnats-dev) for Swift.
//
// nats.h imports as it is: its API is plain functions, enums and opaque pointers, and
// every constant the Swift side needs (natsStatus, natsConnStatus) is an enum case, so no
// macro needs a `static inline` replacement yet. Add one here, with its reason, when a
// function-like macro is needed.
#ifndef ESTUARY_CNATS_SHIM_H
#define ESTUARY_CNATS_SHIM_H

#include <stdbool.h>
#include <stdint.h>
#include <nats/nats.h>

#endif
