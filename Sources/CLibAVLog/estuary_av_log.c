#include "estuary_av_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <libavutil/log.h>

static estuary_av_log_sink installed_sink;

// libav sometimes logs one line in several calls (a prefix, then the rest). Pieces are
// collected per thread until a newline completes the line.
static _Thread_local char pending[1024];
static _Thread_local size_t pending_length;
static _Thread_local int pending_level;
static _Thread_local char pending_component[64];

static void emit(void) {
    estuary_av_log_sink sink = installed_sink;
    if (sink != NULL && pending_length > 0) {
        pending[pending_length] = '\0';
        sink(pending_level, pending_component, pending);
    }
    pending_length = 0;
    pending_component[0] = '\0';
}

static void callback(void *object, int level, const char *format, va_list arguments) {
    if (level > av_log_get_level()) {
        return;
    }
    if (pending_length == 0) {
        pending_level = level;
        pending_component[0] = '\0';
        if (object != NULL) {
            const AVClass *class = *(const AVClass **)object;
            if (class != NULL && class->item_name != NULL) {
                const char *name = class->item_name(object);
                if (name != NULL) {
                    snprintf(pending_component, sizeof pending_component, "%s", name);
                }
            }
        }
    }
    char piece[1024];
    int written = vsnprintf(piece, sizeof piece, format, arguments);
    if (written < 0) {
        return;
    }
    size_t length = strnlen(piece, sizeof piece);
    for (size_t index = 0; index < length; index++) {
        if (piece[index] == '\n') {
            emit();
        } else if (pending_length < sizeof pending - 1) {
            pending[pending_length++] = piece[index];
        }
    }
}

void estuary_av_log_install(estuary_av_log_sink sink, int max_level) {
    installed_sink = sink;
    av_log_set_level(max_level);
    av_log_set_callback(callback);
}
