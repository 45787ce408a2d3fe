/* A worker written in C against heartbeat.h alone (no library): the C side of the protocol.
 * c_writer BEATS [SECTION TIMEOUT_S [leave]]: beats BEATS times, then optionally enters SECTION
 * and leaves it. Exit 0; 3 when PTRUN_HEARTBEAT_FILE is set but unusable; 4 when it is unset. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptrun/progress/heartbeat.h"

int main(int argc, char** argv) {
    ptrun_heartbeat_record* hb;
    long beats;
    long i;
    if (argc < 2) return 2;
    hb = ptrun_heartbeat_open_env();
    if (hb == NULL) {
        if (errno != 0) {
            fprintf(stderr, "c_writer: %s: %s\n", PTRUN_HEARTBEAT_ENV, strerror(errno));
            return 3;
        }
        return 4;
    }
    beats = strtol(argv[1], NULL, 10);
    for (i = 0; i < beats; ++i) ptrun_heartbeat_beat(hb);
    if (argc >= 4) ptrun_heartbeat_enter(hb, argv[2], strtod(argv[3], NULL));
    if (argc >= 5 && strcmp(argv[4], "leave") == 0) ptrun_heartbeat_leave(hb);
    ptrun_heartbeat_close(hb);
    return 0;
}
