#ifndef ESTUARY_CSRT_SHIM_H
#define ESTUARY_CSRT_SHIM_H

// libsrt (Debian's libsrt-gnutls-dev) for the SRT listener. The GnuTLS flavour because it is
// the one Debian's libavformat links: a second libsrt build in the process (the OpenSSL one)
// shares its exported C++ symbols, so both libraries' static objects resolve to one and are
// torn down twice at exit (a segfault in any process that called srt_startup).
// Options are set through these
// typed helpers: `srt_setsockflag` takes a `const void *` and a length, which Swift would
// have to build per type at every call.
#include <srt/srt.h>
#include <srt/access_control.h>
#include <string.h>

static inline int csrt_set_int(SRTSOCKET socket, SRT_SOCKOPT option, int value) {
    return srt_setsockflag(socket, option, &value, sizeof value);
}

static inline int csrt_set_bool(SRTSOCKET socket, SRT_SOCKOPT option, int value) {
    // SRTO_*SYN and the other boolean options are read as `bool` by libsrt.
    _Bool flag = value != 0;
    return srt_setsockflag(socket, option, &flag, sizeof flag);
}

static inline int csrt_set_string(SRTSOCKET socket, SRT_SOCKOPT option, const char *value) {
    return srt_setsockflag(socket, option, value, (int)strlen(value));
}

/// The stream id a caller sent (at most 512 bytes, as SRT bounds it), NUL-terminated in
/// `buffer` of `size` bytes; its length, or -1.
static inline int csrt_get_streamid(SRTSOCKET socket, char *buffer, int size) {
    // libsrt wants room for the terminator too (a 512-byte id needs 513).
    int length = size;
    if (srt_getsockflag(socket, SRTO_STREAMID, buffer, &length) != 0) return -1;
    if (length < 0 || length >= size) return -1;
    buffer[length] = 0;
    return length;
}

/// `SRT_INVALID_SOCK` and `SRT_ERROR` are macros over casts Swift does not import.
static inline SRTSOCKET csrt_invalid_socket(void) { return SRT_INVALID_SOCK; }
static inline int csrt_error(void) { return SRT_ERROR; }

#endif
