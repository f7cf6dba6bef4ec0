/*
 * sd_notify.h - tells a service manager the process's state (systemd's Type=notify protocol:
 * "READY=1", "STOPPING=1", ... in one datagram to the socket named by $NOTIFY_SOCKET).
 *
 * The protocol is spoken directly rather than through libsystemd, so the gateway builds and
 * runs where systemd is absent; without $NOTIFY_SOCKET (a shell, a container, a chroot) it
 * does nothing.
 *
 * Owns: nothing (one socket per call, closed before it returns). Frees: nothing.
 * Threads: any. Bounds: a state string of at most a few hundred bytes, one datagram.
 */
#ifndef LG_SD_NOTIFY_H
#define LG_SD_NOTIFY_H

/* Send `state` (e.g. "READY=1") to $NOTIFY_SOCKET. Return value: 1 sent, 0 no socket named
 * (nothing to do), or -errno (the caller may log it; the gateway runs on regardless). */
int lg_sd_notify(const char *state);

#endif
