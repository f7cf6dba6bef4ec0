/*
 * topic_name.h - the topic-name grammar (docs/protocol.md): 1..128 bytes of A-Z a-z 0-9 _ - .
 * / : ~, and '$' as the first byte only (names reserved for the gateway). The one definition
 * of it: the hub, the parsers and topic_rules' patterns all use these.
 *
 * Owns: nothing. Frees: nothing. Threads: any (the message buffer is per thread).
 * Bounds: LG_TOPIC_NAME_MAX bytes.
 */
#ifndef LG_TOPIC_NAME_H
#define LG_TOPIC_NAME_H

#include <stdbool.h>
#include <stddef.h>

#define LG_TOPIC_NAME_MAX 128

/* The bytes a topic name may hold anywhere, as messages list them. A '$' is also allowed, as
 * the first byte only (reserved names such as "$sys/stats"). */
#define LG_TOPIC_NAME_CHARS "A-Z a-z 0-9 _ - . / : ~"

/* True when c is one of LG_TOPIC_NAME_CHARS (ASCII ranges, whatever the locale). The one
 * definition of a topic name's bytes: topic_rules' patterns use it too, adding '*' and '?'. */
bool lg_topic_name_byte_ok(unsigned char c);

/* Check a topic name against the grammar in docs/protocol.md. Return value: NULL when valid,
 * otherwise a message saying what is wrong: a literal, or this thread's buffer, valid until
 * its next call. */
const char *lg_topic_name_problem(const char *name, size_t len);

#endif
