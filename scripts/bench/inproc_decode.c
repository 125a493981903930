// Measurement aid for docs/benchmarks.md ("The video rows: where the time goes"),
// not part of gulp: decodes each video given on the command line in this
// process with libavformat/libavcodec (one decoding thread, as gulp gives
// ffmpeg), and copies out the frames an 8 fps output would keep (a simple
// nearest-slot rule, close to but not exactly ffmpeg's -r), i.e. the work
// gulp's ffmpeg processes do minus the process starts and the pipe.
//
//   apt-get install libavformat-dev libavcodec-dev libavutil-dev
//   gcc -O2 scripts/bench/inproc_decode.c -o target/inproc_decode $(pkg-config
//       --cflags --libs libavformat libavcodec libavutil)   (one line)
//   /usr/bin/time target/inproc_decode bench-corpus/videos/*/*.mp4
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/imgutils.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static unsigned char *buf; static size_t bufcap;
int main(int argc, char **argv) {
    long frames = 0, kept = 0;
    for (int i = 1; i < argc; i++) {
        AVFormatContext *fc = NULL;
        if (avformat_open_input(&fc, argv[i], NULL, NULL) < 0) { fprintf(stderr, "%s: cannot open\n", argv[i]); return 1; }
        avformat_find_stream_info(fc, NULL);
        int si = av_find_best_stream(fc, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
        if (si < 0) { fprintf(stderr, "%s: no video stream\n", argv[i]); return 1; }
        AVStream *st = fc->streams[si];
        const AVCodec *codec = avcodec_find_decoder(st->codecpar->codec_id);
        AVCodecContext *cc = codec ? avcodec_alloc_context3(codec) : NULL;
        if (!cc || avcodec_parameters_to_context(cc, st->codecpar) < 0) { fprintf(stderr, "%s: no decoder\n", argv[i]); return 1; }
        cc->thread_count = 1;
        if (avcodec_open2(cc, codec, NULL) < 0) { fprintf(stderr, "%s: cannot open the decoder\n", argv[i]); return 1; }
        AVPacket *pkt = av_packet_alloc(); AVFrame *fr = av_frame_alloc();
        double tb = av_q2d(st->time_base); double start = st->start_time == AV_NOPTS_VALUE ? 0 : st->start_time * tb;
        long next = 0; // next output frame index at 8 fps
        int eof = 0;
        while (!eof) {
            int r = av_read_frame(fc, pkt);
            if (r < 0) { avcodec_send_packet(cc, NULL); eof = 1; }
            else if (pkt->stream_index != si) { av_packet_unref(pkt); continue; }
            else { avcodec_send_packet(cc, pkt); av_packet_unref(pkt); }
            while (avcodec_receive_frame(cc, fr) == 0) {
                frames++;
                double t = (fr->best_effort_timestamp == AV_NOPTS_VALUE ? 0 : fr->best_effort_timestamp * tb) - start;
                double dur = fr->pkt_duration > 0 ? fr->pkt_duration * tb : 1.0 / 25;
                // frames whose span covers the next output slots are kept (copied)
                while ((next + 0.5) / 8.0 < t + dur) {
                    size_t need = av_image_get_buffer_size(fr->format, fr->width, fr->height, 1);
                    if (need > bufcap) { buf = realloc(buf, need); bufcap = need; if (!buf) return 1; }
                    av_image_copy_to_buffer(buf, need, (const uint8_t * const *)fr->data, fr->linesize, fr->format, fr->width, fr->height, 1);
                    kept++; next++;
                }
                av_frame_unref(fr);
            }
        }
        av_packet_free(&pkt); av_frame_free(&fr); avcodec_free_context(&cc); avformat_close_input(&fc);
    }
    printf("decoded %ld frames, kept %ld\n", frames, kept);
    return 0;
}
