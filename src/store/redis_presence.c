/*
 * redis_presence.c - presence across nodes over the Redis store (store_redis.h, key
 * <prefix>{T}:m): once a tick the hub hands this node's members of each presence topic to
 * lg_redis__share_presence(), which posts one job per shard to that shard's bridge thread; the
 * job sends one script per topic, all pipelined, that drops expired entries, removes this
 * node's members that left, refreshes those that stay (expiry: now + presence_ttl_ms, Redis'
 * clock) and answers the other nodes' members, deduplicated. Each answer goes to the hub's
 * presence hook on the bridge thread. A node that dies stops refreshing: its entries expire
 * and the next script on any node drops them.
 *
 * Nothing here runs per event. Failure (Redis down, queue full, an error answer): the topic's
 * view is left as it was, counted (presence_shares_failed) and logged once until a share
 * succeeds again.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "log.h"
#include "stats.h"
#include "store_redis_internal.h"

/* KEYS[1] the topic's set; ARGV: ttl ms, the most members to answer, "<node>|", members. */
static const char share_text[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local key, ttl, max, mine = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]\n"
    "redis.call('ZREMRANGEBYSCORE', key, '-inf', now)\n"
    "local keep = {}\n"
    "for i = 4, #ARGV do keep[mine .. ARGV[i]] = true end\n"
    "local others, seen = {}, {}\n"
    "for _, e in ipairs(redis.call('ZRANGE', key, 0, -1)) do\n"
    "  if string.sub(e, 1, #mine) == mine then\n"
    "    if not keep[e] then redis.call('ZREM', key, e) end\n"
    "  else\n"
    "    local bar = string.find(e, '|', 1, true)\n"
    "    local id = bar and string.sub(e, bar + 1)\n"
    "    if id and not seen[id] and #others < max then\n"
    "      seen[id] = true\n"
    "      others[#others + 1] = id\n"
    "    end\n"
    "  end\n"
    "end\n"
    "for i = 4, #ARGV do redis.call('ZADD', key, now + ttl, mine .. ARGV[i]) end\n"
    "if #ARGV > 3 then\n"
    "  local left = redis.call('PTTL', key)\n"
    "  if left < ttl then redis.call('PEXPIRE', key, ttl) end\n"
    "end\n"
    "return others\n";

struct presence_job;

/* One topic's script: its answer's context. */
struct presence_call {
    struct presence_job *job;
    const struct lg_presence_share_topic *topic;
};

/* A shard's part of one share (bridge thread once posted). */
struct presence_job {
    struct lg_redis_job job;
    struct redis_shard *sh;
    struct lg_presence_share *share;
    uint32_t outstanding;          /* scripts unanswered, + 1 while sending */
    uint32_t failed;               /* topics whose view was not read */
    uint32_t count;
    struct presence_call calls[];
};

void lg_redis__node_id(char *out, size_t cap)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id)
        id = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)out; /* unique enough per host */
    snprintf(out, cap, "%016" PRIx64 "|", id);
}

static void release_share(struct lg_presence_share *share)
{
    if (atomic_fetch_sub_explicit(&share->holders, 1, memory_order_acq_rel) == 1)
        share->release(share);
}

/* Count and log failed topics; log once when sharing fails and once when it works again. */
static void account(struct redis_store *st, uint32_t failed, uint32_t tried)
{
    if (failed) {
        LG_STAT_ADD(presence_shares_failed, failed);
        if (!atomic_exchange(&st->presence_failing, true))
            lg_warn("presence across nodes: %" PRIu32 " of %" PRIu32 " topics not shared with "
                    "Redis (down or busy); their views stay as they were", failed, tried);
    } else if (tried && atomic_exchange(&st->presence_failing, false)) {
        lg_info("presence across nodes: shared with Redis again");
    }
}

static void finish_job(struct presence_job *j)
{
    account(j->sh->store, j->failed, j->count);
    release_share(j->share);
    free(j);
}

static void call_done(struct presence_job *j)
{
    if (--j->outstanding == 0)
        finish_job(j);
}

static void on_share_reply(void *reply, void *priv)
{
    struct presence_call *c = priv;
    struct presence_job *j = c->job;
    const redisReply *r = reply;
    struct redis_store *st = j->sh->store;
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        if (r && r->type == REDIS_REPLY_ERROR)
            lg_debug("presence of topic %.*s: Redis answered %s", (int)c->topic->name_len,
                     c->topic->name, r->str);
        j->failed++;
        call_done(j);
        return;
    }
    size_t n = r->elements;
    const char **ids = malloc((n ? n : 1) * sizeof *ids);
    size_t *lens = malloc((n ? n : 1) * sizeof *lens);
    size_t kept = 0;
    for (size_t i = 0; ids && lens && i < n; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_STRING || e->len == 0)
            continue;
        ids[kept] = e->str;
        lens[kept++] = e->len;
    }
    if (ids && lens)
        st->hooks.presence(st->hooks.arg, c->topic->owner, ids, lens, kept);
    else
        j->failed++;
    free(ids);
    free(lens);
    call_done(j);
}

/* Send one topic's script. Return value: 0, or -1 (not sent). */
static int send_script(struct presence_job *j, struct presence_call *c)
{
    struct redis_store *st = j->sh->store;
    const struct lg_presence_share_topic *t = c->topic;
    size_t argc = 7 + (size_t)t->count;
    const char **argv = malloc(argc * sizeof *argv);
    size_t *lens = malloc(argc * sizeof *lens);
    size_t key_cap = strlen(st->prefix) + t->name_len + 8;
    char *key = malloc(key_cap);
    char ttl[16], max[16];
    int rc = -1;
    if (argv && lens && key) {
        snprintf(key, key_cap, "%s{%.*s}:m", st->prefix, (int)t->name_len, t->name);
        snprintf(ttl, sizeof ttl, "%" PRIu32, st->opts.presence_ttl_ms);
        snprintf(max, sizeof max, "%" PRIu32, t->max_members);
        const char *head[] = {"EVAL", share_text, "1", key, ttl, max, st->node};
        for (size_t i = 0; i < 7; i++) {
            argv[i] = head[i];
            lens[i] = strlen(head[i]);
        }
        for (uint32_t i = 0; i < t->count; i++) {
            argv[7 + i] = t->ids[i];
            lens[7 + i] = strlen(t->ids[i]);
        }
        rc = lg_redis_command(j->sh->bridge, on_share_reply, c, (int)argc, argv, lens);
    }
    free(argv);
    free(lens);
    free(key);
    return rc;
}

static void run_share(struct lg_redis_job *job, bool up)
{
    struct presence_job *j = (struct presence_job *)job;
    j->outstanding = 1;
    for (uint32_t i = 0; i < j->count; i++) {
        if (up && send_script(j, &j->calls[i]) == 0)
            j->outstanding++;
        else
            j->failed++;
    }
    call_done(j);
}

/* Post shard sh's topics of share. Return value: how many topics could not be posted. */
static uint32_t post_shard(struct redis_store *st, uint32_t shard, struct lg_presence_share *share)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < share->count; i++)
        n += lg_redis__hash(share->topics[i].name, share->topics[i].name_len) %
                 st->shard_count == shard;
    if (n == 0)
        return 0;
    struct presence_job *j = calloc(1, sizeof *j + n * sizeof j->calls[0]);
    if (!j)
        return n;
    *j = (struct presence_job){.job.run = run_share, .sh = &st->shards[shard], .share = share,
                               .count = n};
    for (uint32_t i = 0, k = 0; i < share->count; i++)
        if (lg_redis__hash(share->topics[i].name, share->topics[i].name_len) %
                st->shard_count == shard)
            j->calls[k++] = (struct presence_call){.job = j, .topic = &share->topics[i]};
    atomic_fetch_add_explicit(&share->holders, 1, memory_order_relaxed);
    if (lg_redis_bridge_post(j->sh->bridge, &j->job))
        return 0;
    atomic_fetch_sub_explicit(&share->holders, 1, memory_order_relaxed);
    free(j);
    return n;
}

void lg_redis__share_presence(struct lg_store *store, struct lg_presence_share *share)
{
    struct redis_store *st = (struct redis_store *)store;
    atomic_store_explicit(&share->holders, 1, memory_order_relaxed); /* this call's */
    uint32_t failed = 0;
    if (st->has_hooks && st->hooks.presence)
        for (uint32_t shard = 0; shard < st->shard_count; shard++)
            failed += post_shard(st, shard, share);
    if (failed)
        account(st, failed, share->count);
    release_share(share);
}
