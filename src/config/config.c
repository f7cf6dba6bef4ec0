/*
 * config.c - strict JSON loading of the settings table (config_table.c), and printing the
 * effective config.
 *
 * DESIGN
 * Every setting is one row of lg_settings[]: its dotted key path, its type, where it lives in
 * struct lg_config, its range, its default and a one-line description. Defaults, loading,
 * validation, --print-config and command-line overrides all walk that one table, so adding a
 * setting is adding a row (plus its field in config.h and a line in docs/configuration.md; the
 * unit tests check that config/livegate.json and the docs stay in step with the table).
 *
 * Loading walks the JSON objects, not the table: each key is looked up by its full path, so an
 * unknown key is caught at any depth and reported with the keys its object allows. Checks that
 * involve more than one setting, and topic_rules inheriting from "history", run only after the
 * whole document is applied, because JSON key order must not change the result.
 *
 * The row type and checking one value against its row (with the helpers that word every
 * message) are in config_setting.c, the table itself in config_table.c. The "topic_rules" array
 * is handed to topic_rules.c, which checks a rule's values against the table through
 * config_setting.h. This file reads and walks the document, and prints the config.
 */
#include "config.h"

#include "client_address.h"
#include "config_setting.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

/* ---- Walking the document ---------------------------------------------------------------- */

/* Apply every key of obj, the object at prefix ("" for the root, else e.g. "limits."). */
static int lg_config__apply_object(struct lg_config *cfg, const json_t *obj, const char *prefix,
                                   char *err)
{
    const char *key;
    size_t key_len;
    json_t *v;
    json_object_keylen_foreach((json_t *)obj, key, key_len, v) {
        char path[LG_PATH_MAX];
        snprintf(path, sizeof(path), "%s%s", prefix, key);
        /* A key holding '.' or NUL would alias a nested setting ("limits.max_topics" at the
         * top level), and one cut short by the buffer would alias a shorter one. */
        bool plain = key_len == strlen(key) && key_len > 0 && strchr(key, '.') == NULL &&
                     strlen(prefix) + key_len < sizeof(path);
        const struct lg_setting *s = plain ? lg_config__find(path) : NULL;
        if (s != NULL && s->type == LG_SETTING_RULES) {
            if (lg_topic_rules_parse(v, &cfg->topic_rules, &cfg->topic_rule_count, err) != 0)
                return -1;
        } else if (s != NULL) {
            if (lg_config__apply(s, (char *)cfg + s->offset, v, path, err) != 0)
                return -1;
        } else if (plain && lg_config__is_object(path)) {
            if (!json_is_object(v)) {
                lg_config__errf(err, "%s: expected an object, got %s", path,
                                lg_config__json_type(v));
                return -1;
            }
            char child_prefix[LG_PATH_MAX + 1];
            snprintf(child_prefix, sizeof(child_prefix), "%s.", path);
            if (lg_config__apply_object(cfg, v, child_prefix, err) != 0)
                return -1;
        } else {
            char allowed[LG_CONFIG_ERR_MAX], object_name[LG_PATH_MAX];
            lg_config__allowed_keys(allowed, sizeof(allowed), prefix);
            snprintf(object_name, sizeof(object_name), "%.*s",
                     (int)(prefix[0] ? strlen(prefix) - 1 : 0), prefix);
            return lg_config__unknown_key(err, path, object_name, allowed);
        }
    }
    return 0;
}

/* Checks between settings; both key names appear in the message. */
/* Sentinel finds one master: it replaces redis.url, and shards (one master name each) are not
 * supported. WAIT blocks the connection it is sent on, so it must end before the watchdog
 * (redis.command_timeout_ms) takes the connection for hung. Return value: 0, or -1 with err. */
static int lg_config__check_sentinel(const struct lg_config *cfg, char *err)
{
    bool sentinels = cfg->redis.sentinels.count > 0, named = cfg->redis.master_name[0] != '\0';
    if (sentinels != named) {
        lg_config__errf(err, sentinels ? "redis.sentinels needs redis.master_name (the name they "
                                         "monitor the master by)"
                                       : "redis.master_name needs redis.sentinels (who to ask "
                                         "for its address)");
        return -1;
    }
    if (sentinels && (cfg->redis.url[0] || cfg->redis.shards.count)) {
        lg_config__errf(err, "redis.sentinels and %s: set one, not both (with Sentinel the "
                        "master's address comes from the sentinels; shards over Sentinel are "
                        "not supported)", cfg->redis.url[0] ? "redis.url" : "redis.shards");
        return -1;
    }
    if (cfg->redis.wait_replicas && cfg->redis.wait_timeout_ms >= cfg->redis.command_timeout_ms) {
        lg_config__errf(err, "redis.wait_timeout_ms (%" PRIu32 ") must be less than "
                        "redis.command_timeout_ms (%" PRIu32 "): a WAIT holds its connection that "
                        "long", cfg->redis.wait_timeout_ms, cfg->redis.command_timeout_ms);
        return -1;
    }
    return 0;
}

static bool lg_config__http_url(const char *url)
{
    return strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0;
}

/* A hook's URL is http(s); a webhook is signed, so it needs its secret; retry delays grow
 * from the least to the most. */
static int lg_config__check_hooks(const struct lg_config *cfg, char *err)
{
    const char *sub = cfg->subscribe_hook.url, *web = cfg->webhooks.url;
    if ((sub[0] && !lg_config__http_url(sub)) || (web[0] && !lg_config__http_url(web))) {
        lg_config__errf(err, "%s: a hook URL is http://... or https://...",
                        sub[0] && !lg_config__http_url(sub) ? "subscribe_hook.url"
                                                             : "webhooks.url");
        return -1;
    }
    if (web[0] && !cfg->webhooks.secret[0]) {
        lg_config__errf(err, "webhooks.url needs webhooks.secret (every notice is signed with "
                        "it: the receiver checks Livegate-Signature)");
        return -1;
    }
    if (cfg->webhooks.retry_min_ms > cfg->webhooks.retry_max_ms) {
        lg_config__errf(err, "webhooks.retry_min_ms (%" PRIu32 ") must not exceed "
                        "webhooks.retry_max_ms (%" PRIu32 ")", cfg->webhooks.retry_min_ms,
                        cfg->webhooks.retry_max_ms);
        return -1;
    }
    return 0;
}

static int lg_config__check(const struct lg_config *cfg, char *err)
{
    if (lg_config__check_hooks(cfg, err) != 0)
        return -1;
    if (cfg->poll.default_timeout_ms > cfg->poll.max_timeout_ms) {
        lg_config__errf(err, "poll.default_timeout_ms (%" PRIu32 ") must not exceed "
                        "poll.max_timeout_ms (%" PRIu32 ")", cfg->poll.default_timeout_ms,
                        cfg->poll.max_timeout_ms);
        return -1;
    }
    struct lg_client_address proxies[LG_TRUSTED_PROXIES_MAX];
    size_t bad = 0;
    if (lg_client_address_list_parse(cfg->trusted_proxies ? cfg->trusted_proxies : "", proxies,
                                     LG_TRUSTED_PROXIES_MAX, &bad) < 0) {
        lg_config__errf(err, "trusted_proxies: the entry at byte %zu is not a numeric IPv4 or "
                        "IPv6 address (at most %d, comma-separated)", bad, LG_TRUSTED_PROXIES_MAX);
        return -1;
    }
    if (cfg->limits.max_event_bytes > cfg->limits.max_batch_bytes) {
        lg_config__errf(err, "limits.max_event_bytes (%" PRIu32 ") must not exceed "
                        "limits.max_batch_bytes (%" PRIu32 ")", cfg->limits.max_event_bytes,
                        cfg->limits.max_batch_bytes);
        return -1;
    }
    if (cfg->auth.hs256_secret[0] && cfg->auth.rs256_public_key_file[0]) {
        lg_config__errf(err, "auth.hs256_secret and auth.rs256_public_key_file: set one, not "
                        "both (the algorithm is pinned by the key, never taken from a token)");
        return -1;
    }
    if (cfg->redis.url[0] && cfg->redis.shards.count) {
        lg_config__errf(err, "redis.url and redis.shards: set one, not both (with shards, list "
                        "every Redis in redis.shards)");
        return -1;
    }
    if (lg_config__check_sentinel(cfg, err) != 0)
        return -1;
    const struct lg_string_list *o = &cfg->allowed_origins;
    for (size_t i = 0; i < o->count; i++)
        if (strcmp(o->items[i], "*") == 0 && o->count > 1) {
            lg_config__errf(err, "allowed_origins: \"*\" allows every origin (without "
                            "credentials) and cannot be combined with listed origins");
            return -1;
        }
    return 0;
}

bool lg_config_auth_enabled(const struct lg_config *cfg)
{
    return (cfg->auth.hs256_secret && cfg->auth.hs256_secret[0]) ||
           (cfg->auth.rs256_public_key_file && cfg->auth.rs256_public_key_file[0]) ||
           (cfg->auth.jwks_file && cfg->auth.jwks_file[0]) ||
           cfg->auth.anonymous_subscribe.count > 0;
}

static int lg_config__apply_root(struct lg_config *cfg, json_t *root, const json_error_t *jerr,
                                 char *err)
{
    if (root == NULL) {
        if (jerr->line >= 1)
            lg_config__errf(err, "invalid JSON at line %d, column %d: %s", jerr->line,
                            jerr->column, jerr->text);
        else
            lg_config__errf(err, "%s", jerr->text);
        return -1;
    }
    int rc = -1;
    if (!json_is_object(root))
        lg_config__errf(err, "the document must be a JSON object, got %s",
                        lg_config__json_type(root));
    else if (lg_config__apply_object(cfg, root, "", err) == 0 && lg_config__check(cfg, err) == 0)
        rc = 0;
    /* Resolve even after a failure so the rules never hold stale inherited values. */
    lg_topic_rules_resolve(cfg->topic_rules, cfg->topic_rule_count, &cfg->history);
    json_decref(root);
    return rc;
}

/* ---- Public API ----------------------------------------------------------------------------- */

void lg_config_init_defaults(struct lg_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    size_t count;
    const struct lg_setting *settings = lg_config__settings(&count);
    for (size_t i = 0; i < count; i++) {
        const struct lg_setting *s = &settings[i];
        void *field = (char *)cfg + s->offset;
        switch (s->type) {
        case LG_SETTING_U32: *(uint32_t *)field = (uint32_t)s->def; break;
        case LG_SETTING_U64: *(uint64_t *)field = s->def; break;
        case LG_SETTING_BOOL: *(bool *)field = s->def != 0; break;
        case LG_SETTING_ENUM: {
            unsigned value = (unsigned)s->def;
            memcpy(field, &value, sizeof(value));
            break;
        }
        case LG_SETTING_STRING:
            /* Defaults are built once at start, before anything can be served; failing here
             * leaves nothing sensible to run, and keeps this function infallible. */
            if ((*(char **)field = strdup(s->def_text)) == NULL)
                abort();
            break;
        case LG_SETTING_ADDR: {
            char err[LG_CONFIG_ERR_MAX];
            if (lg_config_parse_addr(s->def_text, field, err) != 0)
                abort(); /* a broken built-in default is a bug in the table above */
            break;
        }
        case LG_SETTING_RULES:
        case LG_SETTING_LIST: break;
        }
    }
}

int lg_config_load_string(struct lg_config *cfg, const char *json, char err[LG_CONFIG_ERR_MAX])
{
    json_error_t jerr;
    json_t *root = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);
    return lg_config__apply_root(cfg, root, &jerr, err);
}

int lg_config_load_file(struct lg_config *cfg, const char *path, char err[LG_CONFIG_ERR_MAX])
{
    /* Opened here rather than by json_load_file() so the message reads "cannot open: why"
     * without repeating the path the caller already prefixes. */
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        lg_config__errf(err, "cannot open: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        lg_config__errf(err, "cannot read: %s", strerror(EISDIR));
        return -1;
    }
    json_error_t jerr;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
    fclose(f);
    return lg_config__apply_root(cfg, root, &jerr, err);
}

int lg_config_set_uint(struct lg_config *cfg, const char *key, uint64_t value, const char *label,
                       char err[LG_CONFIG_ERR_MAX])
{
    const struct lg_setting *s = lg_config__find(key);
    const char *name = label != NULL ? label : key;
    if (s == NULL || (s->type != LG_SETTING_U32 && s->type != LG_SETTING_U64)) {
        lg_config__errf(err, "%s: no integer setting named \"%s\"", name, key);
        return -1;
    }
    if (value < s->min || value > s->max) {
        lg_config__errf(err, "%s: %" PRIu64 " is out of range (allowed %" PRIu64 "..%" PRIu64 ")",
                        name, value, s->min, s->max);
        return -1;
    }
    void *field = (char *)cfg + s->offset;
    if (s->type == LG_SETTING_U32)
        *(uint32_t *)field = (uint32_t)value;
    else
        *(uint64_t *)field = value;
    return 0;
}

int lg_config_parse_addr(const char *text, struct lg_listen_addr *out, char err[LG_CONFIG_ERR_MAX])
{
    char shown[80];
    lg_config__display(shown, sizeof(shown), text);
    const char *host = text, *host_end, *colon;
    if (text[0] == '[') {
        host = text + 1;
        host_end = strchr(host, ']');
        if (host_end == NULL || host_end[1] != ':') {
            lg_config__errf(err, "\"%s\" is not [IPv6]:PORT (e.g. \"[::1]:8080\")", shown);
            return -1;
        }
        colon = host_end + 1;
    } else {
        colon = strrchr(text, ':');
        if (colon == NULL) {
            lg_config__errf(err, "\"%s\" has no port; expected HOST:PORT (e.g. "
                            "\"127.0.0.1:8080\") or [IPv6]:PORT", shown);
            return -1;
        }
        if (memchr(text, ':', (size_t)(colon - text)) != NULL) {
            lg_config__errf(err, "\"%s\": an IPv6 address needs brackets, e.g. \"[::1]:8080\"",
                            shown);
            return -1;
        }
        host_end = colon;
    }

    char host_buf[sizeof(out->host)];
    size_t host_len = (size_t)(host_end - host);
    if (host_len == 0 || host_len >= sizeof(host_buf)) {
        lg_config__errf(err, "\"%s\": the host must be 1..%zu bytes", shown, sizeof(host_buf) - 1);
        return -1;
    }
    memcpy(host_buf, host, host_len);
    host_buf[host_len] = '\0';
    unsigned char bin[16];
    bool v6 = text[0] == '[';
    bool ok = v6 ? inet_pton(AF_INET6, host_buf, bin) == 1
                 : inet_pton(AF_INET, host_buf, bin) == 1 || strcmp(host_buf, "localhost") == 0;
    if (!ok) {
        lg_config__errf(err, "\"%s\": \"%s\" is not a numeric %s address%s", shown, host_buf,
                        v6 ? "IPv6" : "IPv4", v6 ? "" : " or \"localhost\"");
        return -1;
    }

    const char *port = colon + 1;
    size_t digits = strspn(port, "0123456789");
    if (digits == 0 || port[digits] != '\0') {
        lg_config__errf(err, "\"%s\": the port must be a decimal number 0..65535", shown);
        return -1;
    }
    unsigned long value = digits > 5 ? 65536ul : strtoul(port, NULL, 10);
    if (value > 65535) {
        lg_config__errf(err, "\"%s\": port %s is out of range (allowed 0..65535)", shown, port);
        return -1;
    }
    memcpy(out->host, host_buf, host_len + 1);
    out->port = (uint16_t)value;
    return 0;
}

static json_t *lg_config__addr_json(const struct lg_listen_addr *a)
{
    char text[sizeof(a->host) + 16];
    snprintf(text, sizeof(text), strchr(a->host, ':') ? "[%s]:%u" : "%s:%u", a->host,
             (unsigned)a->port);
    return json_string(text);
}

/* The object at the dotted path's parent inside root, created on first use. */
static json_t *lg_config__parent(json_t *root, const char *key, const char **leaf)
{
    json_t *obj = root;
    const char *dot;
    while (obj != NULL && (dot = strchr(key, '.')) != NULL) {
        json_t *child = json_object_getn(obj, key, (size_t)(dot - key));
        if (child == NULL) {
            child = json_object();
            if (json_object_setn_new(obj, key, (size_t)(dot - key), child) != 0)
                return NULL;
        }
        obj = child;
        key = dot + 1;
    }
    *leaf = key;
    return obj;
}

/* One setting's value as --print-config writes it. Return value: a new reference, or NULL
 * when out of memory. */
static json_t *lg_config__setting_json(const struct lg_config *cfg, const struct lg_setting *s)
{
    const void *field = (const char *)cfg + s->offset;
    switch (s->type) {
    case LG_SETTING_U32: return json_integer(*(const uint32_t *)field);
    case LG_SETTING_U64: return json_integer((json_int_t) * (const uint64_t *)field);
    case LG_SETTING_BOOL: return json_boolean(*(const bool *)field);
    case LG_SETTING_STRING: return json_string(*(char *const *)field);
    case LG_SETTING_ADDR: return lg_config__addr_json(field);
    case LG_SETTING_RULES: return lg_topic_rules_json(cfg->topic_rules, cfg->topic_rule_count);
    case LG_SETTING_LIST: {
        const struct lg_string_list *l = field;
        json_t *v = json_array();
        for (size_t j = 0; v != NULL && j < l->count; j++)
            if (json_array_append_new(v, json_string(l->items[j])) != 0) {
                json_decref(v);
                v = NULL;
            }
        return v;
    }
    case LG_SETTING_ENUM: {
        unsigned value;
        memcpy(&value, field, sizeof(value));
        return json_string(s->names[value]);
    }
    }
    return NULL;
}

int lg_config_diff(const struct lg_config *a, const struct lg_config *b,
                   void (*visit)(const char *key, bool live, void *ctx), void *ctx)
{
    size_t count;
    const struct lg_setting *settings = lg_config__settings(&count);
    int changed = 0;
    for (size_t i = 0; i < count; i++) {
        json_t *va = lg_config__setting_json(a, &settings[i]);
        json_t *vb = lg_config__setting_json(b, &settings[i]);
        bool same = va && vb && json_equal(va, vb);
        json_decref(va);
        json_decref(vb);
        if (!va || !vb)
            return -1;
        if (!same) {
            visit(settings[i].key, settings[i].live, ctx);
            changed++;
        }
    }
    return changed;
}

void lg_config_each_setting(void (*visit)(const char *key, bool live, void *ctx), void *ctx)
{
    size_t count;
    const struct lg_setting *settings = lg_config__settings(&count);
    for (size_t i = 0; i < count; i++)
        visit(settings[i].key, settings[i].live, ctx);
}

char *lg_config_to_json(const struct lg_config *cfg)
{
    json_t *root = json_object();
    size_t count;
    const struct lg_setting *settings = lg_config__settings(&count);
    for (size_t i = 0; root != NULL && i < count; i++) {
        const struct lg_setting *s = &settings[i];
        json_t *v = lg_config__setting_json(cfg, s);
        const char *leaf;
        json_t *parent = lg_config__parent(root, s->key, &leaf);
        if (v == NULL || parent == NULL || json_object_set_new(parent, leaf, v) != 0) {
            if (parent == NULL)
                json_decref(v);
            json_decref(root);
            root = NULL;
        }
    }
    if (root == NULL)
        return NULL;
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (text == NULL)
        return NULL;
    size_t len = strlen(text);
    char *out = realloc(text, len + 2);
    if (out == NULL) {
        free(text);
        return NULL;
    }
    memcpy(out + len, "\n", 2);
    return out;
}

void lg_config_release(struct lg_config *cfg)
{
    lg_topic_rules_free(cfg->topic_rules, cfg->topic_rule_count);
    free(cfg->static_dir);
    free(cfg->trusted_proxies);
    free(cfg->redis.url);
    free(cfg->redis.key_prefix);
    free(cfg->auth.hs256_secret);
    free(cfg->auth.rs256_public_key_file);
    free(cfg->auth.jwks_file);
    free(cfg->auth.control_token);
    free(cfg->auth.cookie);
    lg_string_list_free(&cfg->auth.anonymous_subscribe);
    lg_string_list_free(&cfg->redis.shards);
    lg_string_list_free(&cfg->redis.sentinels);
    free(cfg->redis.master_name);
    lg_string_list_free(&cfg->allowed_origins);
    lg_string_list_free(&cfg->metrics_topics);
    free(cfg->subscribe_hook.url);
    lg_string_list_free(&cfg->subscribe_hook.topics);
    free(cfg->webhooks.url);
    free(cfg->webhooks.secret);
    memset(cfg, 0, sizeof(*cfg));
}
