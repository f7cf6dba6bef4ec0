/*
 * hook_backend.c - lg_hook_backend: the backend of bench/hook_connect.sh, a subscribe hook that
 * allows every topic after --delay-ms (1 ms by default). It is the hook tests' backend stub
 * (tests/support/lg_backend.c, a libmicrohttpd server, a thread per connection) run on its
 * own: it prints its port, then serves until SIGTERM or SIGINT.
 *
 *   lg_hook_backend [--delay-ms N]
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/lg_backend.h"

int main(int argc, char **argv)
{
    int delay_ms = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--delay-ms") == 0 && i + 1 < argc) {
            delay_ms = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: lg_hook_backend [--delay-ms N]\n");
            return 2;
        }
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* before the daemon's threads inherit the mask */
    struct lg_backend *b = lg_backend_start(0, 0, delay_ms);
    if (!b)
        return 1;
    printf("%u\n", lg_backend_port(b));
    fflush(stdout);
    int sig;
    sigwait(&set, &sig);
    lg_backend_stop(b);
    return 0;
}
