/*
 * live_limits.c - see live_limits.h.
 */
#include "live_limits.h"

static void put(_Atomic uint32_t *field, uint32_t value)
{
    atomic_store_explicit(field, value, memory_order_relaxed);
}

void lg_live_limits_store(struct lg_live_limits *l, const struct lg_config *cfg)
{
    put(&l->max_event_bytes, cfg->limits.max_event_bytes);
    put(&l->max_batch_bytes, cfg->limits.max_batch_bytes);
    put(&l->max_topics, cfg->limits.max_topics);
    put(&l->publish_wait_ms, cfg->limits.publish_wait_ms);
    put(&l->max_topics_per_client, cfg->limits.max_topics_per_client);
    put(&l->topic_creations_per_s, cfg->limits.topic_creations_per_s);
    put(&l->keepalive_timeout_ms, cfg->limits.keepalive_timeout_ms);
    put(&l->poll_default_timeout_ms, cfg->poll.default_timeout_ms);
    put(&l->poll_max_timeout_ms, cfg->poll.max_timeout_ms);
}
