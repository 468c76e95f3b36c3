// Routes libav's log output (av_log) to a function of the host program.
//
// av_log's callback receives a printf format and a va_list, which Swift cannot consume.
// This C shim formats each message and hands complete lines to the sink.
#ifndef ESTUARY_AV_LOG_H
#define ESTUARY_AV_LOG_H

/// Receives one complete line: libav's level (AV_LOG_*), the name of the libav component
/// that logged it ("libx264", "h264", "aac"; empty when none), and the text without its
/// trailing newline. Called on whichever thread logged: decoder, encoder or muxer threads.
typedef void (*estuary_av_log_sink)(int level, const char *component, const char *message);

/// Installs `sink` as libav's log callback and sets libav's level to `max_level`: messages
/// above it are discarded before they are formatted.
void estuary_av_log_install(estuary_av_log_sink sink, int max_level);

#endif
