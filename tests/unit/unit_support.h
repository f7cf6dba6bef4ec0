/*
 * unit_support.h - small checks that more than one unit suite (tests/unit) uses.
 */
#ifndef LG_UNIT_SUPPORT_H
#define LG_UNIT_SUPPORT_H

#include <check.h>
#include <stdint.h>

#include "config.h"

/* cfg gives topic exactly this slow-consumer policy and these history bounds (the failure
 * names the topic and the value). */
static inline void lg_assert_topic_gets(const struct lg_config *cfg, const char *topic,
                                        enum lg_slow_policy policy, uint32_t max_events,
                                        uint64_t max_bytes, uint64_t max_age_ms)
{
    enum lg_slow_policy got = lg_config_policy_for(cfg, topic);
    ck_assert_msg(got == policy, "%s: on_slow %s, want %s", topic, lg_slow_policy_name(got),
                  lg_slow_policy_name(policy));
    struct lg_history_bounds h = lg_config_history_for(cfg, topic);
    ck_assert_msg(h.max_events == max_events, "%s: history.max_events %u, want %u", topic,
                  (unsigned)h.max_events, (unsigned)max_events);
    ck_assert_msg(h.max_bytes == max_bytes, "%s: history.max_bytes %llu, want %llu", topic,
                  (unsigned long long)h.max_bytes, (unsigned long long)max_bytes);
    ck_assert_msg(h.max_age_ms == max_age_ms, "%s: history.max_age_ms %llu, want %llu", topic,
                  (unsigned long long)h.max_age_ms, (unsigned long long)max_age_ms);
}

#endif
