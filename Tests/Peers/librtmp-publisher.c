/*
 * A publisher built on librtmp the way the mobile SDKs derived from LFLiveKit use it: the
 * application builds RTMPPackets itself and hands them to RTMP_SendPacket, choosing the header
 * size, and librtmp compresses the headers against the previous packet on the same channel.
 * The integration tests compile it with the system C compiler and publish FLV files with it.
 *
 *   librtmp-publisher [options] rtmp://host:port/app/name file.flv
 *
 * --headers medium        every packet RTMP_PACKET_SIZE_MEDIUM (LFLiveKit's audio and data):
 *                         the first packet on a fresh channel goes out with a type 1 header
 * --headers large-first   RTMP_PACKET_SIZE_LARGE on each channel's first packet, MEDIUM after
 * --headers lfl           LFLiveKit exactly: video LARGE, audio and metadata MEDIUM
 * --chunk-size N          send Set Chunk Size N right after `connect` (default: stay at 128)
 * --timestamp-base MS     add MS to every timestamp (2^24 and up forces extended timestamps,
 *                         which librtmp repeats on type 3 continuation chunks)
 * --reconnect-at-tag N    after tag N (at the next keyframe), close the connection, connect
 *                         again and resend metadata and the AVC and AAC sequence headers, with
 *                         timestamps starting again from 0, as an SDK does after a network drop
 *
 * Tags are paced in real time. Exit status 0 when every tag was sent.
 */
#include <librtmp/log.h>
#include <librtmp/rtmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { CHANNEL_AUDIO = 4, CHANNEL_DATA = 5, CHANNEL_VIDEO = 6 };
enum headers_mode { HEADERS_MEDIUM, HEADERS_LARGE_FIRST, HEADERS_LFL };

struct tag {
    uint8_t type;
    uint32_t timestamp;
    uint32_t size;
    uint8_t *body;
};

struct options {
    enum headers_mode headers;
    int chunk_size;
    uint32_t timestamp_base;
    long reconnect_at_tag;
    const char *url;
    const char *path;
};

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_until(double deadline) {
    double left = deadline - now_seconds();
    if (left <= 0) return;
    struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
    nanosleep(&ts, NULL);
}

/* Reads every tag of an FLV file; returns the count, or -1. */
static long read_flv(const char *path, struct tag **out) {
    FILE *file = fopen(path, "rb");
    if (!file) return -1;
    uint8_t header[13];
    if (fread(header, 1, 13, file) != 13 || memcmp(header, "FLV", 3) != 0) {
        fclose(file);
        return -1;
    }
    long count = 0, capacity = 256;
    struct tag *tags = calloc((size_t)capacity, sizeof *tags);
    uint8_t th[11];
    while (tags && fread(th, 1, 11, file) == 11) {
        uint32_t size = (uint32_t)th[1] << 16 | (uint32_t)th[2] << 8 | th[3];
        uint32_t timestamp = (uint32_t)th[7] << 24 | (uint32_t)th[4] << 16 | (uint32_t)th[5] << 8 | th[6];
        uint8_t *body = malloc(size ? size : 1);
        uint8_t trailer[4];
        if (!body || fread(body, 1, size, file) != size || fread(trailer, 1, 4, file) != 4) {
            free(body);
            break;
        }
        if (count == capacity) {
            capacity *= 2;
            struct tag *grown = realloc(tags, (size_t)capacity * sizeof *tags);
            if (!grown) break;
            tags = grown;
        }
        tags[count++] = (struct tag){th[0] & 0x1F, timestamp, size, body};
    }
    fclose(file);
    *out = tags;
    return tags ? count : -1;
}

static int is_keyframe(const struct tag *tag) {
    return tag->type == 9 && tag->size > 1 && (tag->body[0] >> 4) == 1 && !(tag->size > 1 && tag->body[1] == 0);
}

static int is_sequence_header(const struct tag *tag) {
    if (tag->size < 2) return 0;
    if (tag->type == 9) return (tag->body[0] & 0x0F) == 7 && tag->body[1] == 0;
    if (tag->type == 8) return (tag->body[0] >> 4) == 10 && tag->body[1] == 0;
    return 0;
}

/* The header size the application asks for, as the mode prescribes. */
static int header_for(const struct options *options, const struct tag *tag, int first_on_channel) {
    switch (options->headers) {
    case HEADERS_MEDIUM:
        return RTMP_PACKET_SIZE_MEDIUM;
    case HEADERS_LARGE_FIRST:
        return first_on_channel ? RTMP_PACKET_SIZE_LARGE : RTMP_PACKET_SIZE_MEDIUM;
    case HEADERS_LFL:
        return tag->type == 9 ? RTMP_PACKET_SIZE_LARGE : RTMP_PACKET_SIZE_MEDIUM;
    }
    return RTMP_PACKET_SIZE_MEDIUM;
}

static int send_tag(RTMP *rtmp, const struct options *options, const struct tag *tag, uint32_t timestamp, int *sent_on_channel) {
    int channel = tag->type == 8 ? CHANNEL_AUDIO : tag->type == 9 ? CHANNEL_VIDEO : CHANNEL_DATA;
    RTMPPacket packet;
    RTMPPacket_Reset(&packet);
    if (!RTMPPacket_Alloc(&packet, tag->size)) return 0;
    memcpy(packet.m_body, tag->body, tag->size);
    packet.m_nBodySize = tag->size;
    packet.m_packetType = tag->type;
    packet.m_nChannel = channel;
    packet.m_nTimeStamp = timestamp;
    packet.m_hasAbsTimestamp = 0;
    packet.m_nInfoField2 = rtmp->m_stream_id;
    packet.m_headerType = (uint8_t)header_for(options, tag, !sent_on_channel[channel]);
    int ok = RTMP_SendPacket(rtmp, &packet, 0);
    sent_on_channel[channel] = 1;
    RTMPPacket_Free(&packet);
    return ok;
}

static RTMP *open_publisher(const struct options *options) {
    RTMP *rtmp = RTMP_Alloc();
    if (!rtmp) return NULL;
    RTMP_Init(rtmp);
    rtmp->Link.timeout = 10;
    char *url = strdup(options->url); /* RTMP_SetupURL keeps pointers into it */
    if (!url || !RTMP_SetupURL(rtmp, url)) {
        fprintf(stderr, "librtmp-publisher: bad URL %s\n", options->url);
        RTMP_Free(rtmp);
        return NULL;
    }
    RTMP_EnableWrite(rtmp);
    if (!RTMP_Connect(rtmp, NULL)) {
        fprintf(stderr, "librtmp-publisher: connect failed\n");
        RTMP_Free(rtmp);
        return NULL;
    }
    if (options->chunk_size > 0) {
        /* Set Chunk Size right after `connect`, before its _result: librtmp's own writers
         * and several SDKs announce a bigger chunk size this early. */
        RTMPPacket packet;
        RTMPPacket_Reset(&packet);
        RTMPPacket_Alloc(&packet, 4);
        packet.m_nChannel = 0x02;
        packet.m_headerType = RTMP_PACKET_SIZE_LARGE;
        packet.m_packetType = 0x01;
        packet.m_nBodySize = 4;
        uint32_t size = (uint32_t)options->chunk_size;
        packet.m_body[0] = (uint8_t)(size >> 24);
        packet.m_body[1] = (uint8_t)(size >> 16);
        packet.m_body[2] = (uint8_t)(size >> 8);
        packet.m_body[3] = (uint8_t)size;
        int ok = RTMP_SendPacket(rtmp, &packet, 0);
        RTMPPacket_Free(&packet);
        if (!ok) {
            RTMP_Free(rtmp);
            return NULL;
        }
        rtmp->m_outChunkSize = options->chunk_size;
    }
    if (!RTMP_ConnectStream(rtmp, 0)) {
        fprintf(stderr, "librtmp-publisher: publish failed\n");
        RTMP_Close(rtmp);
        RTMP_Free(rtmp);
        return NULL;
    }
    return rtmp;
}

static int parse_options(int argc, char **argv, struct options *options) {
    *options = (struct options){HEADERS_MEDIUM, 0, 0, -1, NULL, NULL};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--headers") == 0 && i + 1 < argc) {
            const char *mode = argv[++i];
            if (strcmp(mode, "medium") == 0) options->headers = HEADERS_MEDIUM;
            else if (strcmp(mode, "large-first") == 0) options->headers = HEADERS_LARGE_FIRST;
            else if (strcmp(mode, "lfl") == 0) options->headers = HEADERS_LFL;
            else return 0;
        } else if (strcmp(arg, "--chunk-size") == 0 && i + 1 < argc) {
            options->chunk_size = atoi(argv[++i]);
        } else if (strcmp(arg, "--timestamp-base") == 0 && i + 1 < argc) {
            options->timestamp_base = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else if (strcmp(arg, "--reconnect-at-tag") == 0 && i + 1 < argc) {
            options->reconnect_at_tag = atol(argv[++i]);
        } else if (!options->url) {
            options->url = arg;
        } else if (!options->path) {
            options->path = arg;
        } else {
            return 0;
        }
    }
    return options->url && options->path;
}

int main(int argc, char **argv) {
    struct options options;
    if (!parse_options(argc, argv, &options)) {
        fprintf(stderr, "usage: librtmp-publisher [--headers medium|large-first|lfl] [--chunk-size N] "
                        "[--timestamp-base MS] [--reconnect-at-tag N] URL file.flv\n");
        return 2;
    }
    RTMP_LogSetLevel(RTMP_LOGWARNING);
    struct tag *tags = NULL;
    long count = read_flv(options.path, &tags);
    if (count <= 0) {
        fprintf(stderr, "librtmp-publisher: cannot read %s\n", options.path);
        return 1;
    }
    /* The tags a new session sends before media: metadata and the sequence headers. */
    const struct tag *preamble[3] = {NULL, NULL, NULL};
    int preamble_count = 0;
    for (long i = 0; i < count && preamble_count < 3; i++) {
        if (tags[i].type == 18 || is_sequence_header(&tags[i])) preamble[preamble_count++] = &tags[i];
    }

    RTMP *rtmp = open_publisher(&options);
    if (!rtmp) return 1;
    int sent_on_channel[64] = {0};
    double start = now_seconds();
    uint32_t session_origin = 0; /* the source timestamp that maps to 0 in this session */
    int reconnected = 0, pending_reconnect = 0, sessions = 1;
    long sent = 0;
    for (long i = 0; i < count; i++) {
        const struct tag *tag = &tags[i];
        if (options.reconnect_at_tag >= 0 && i >= options.reconnect_at_tag && !reconnected) pending_reconnect = 1;
        if (pending_reconnect && is_keyframe(tag)) {
            pending_reconnect = 0;
            reconnected = 1;
            RTMP_Close(rtmp);
            RTMP_Free(rtmp);
            rtmp = open_publisher(&options);
            if (!rtmp) return 1;
            sessions += 1;
            memset(sent_on_channel, 0, sizeof sent_on_channel);
            session_origin = tag->timestamp;
            for (int p = 0; p < preamble_count; p++) {
                if (!send_tag(rtmp, &options, preamble[p], options.timestamp_base, sent_on_channel)) {
                    fprintf(stderr, "librtmp-publisher: resending the preamble failed\n");
                    return 1;
                }
            }
        }
        sleep_until(start + (double)tag->timestamp / 1000.0);
        uint32_t timestamp = tag->timestamp - (tag->timestamp >= session_origin ? session_origin : tag->timestamp);
        if (!send_tag(rtmp, &options, tag, timestamp + options.timestamp_base, sent_on_channel)) {
            fprintf(stderr, "librtmp-publisher: send failed at tag %ld\n", i);
            return 1;
        }
        sent += 1;
    }
    RTMP_Close(rtmp);
    RTMP_Free(rtmp);
    printf("sent %ld tags in %d session(s)\n", sent, sessions);
    for (long i = 0; i < count; i++) free(tags[i].body);
    free(tags);
    return 0;
}
