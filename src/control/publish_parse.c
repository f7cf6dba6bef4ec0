/*
 * publish_parse.c - see publish_parse.h. Validation order and every message are part of the
 * protocol (docs/protocol.md, "Control port"); tests assert them byte for byte.
 */
#include "publish_parse.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <stdio.h>

#include "encode.h"
#include "http_request.h"
#include "json_text.h"

static bool type_char_ok(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '.' || ch == ':' || ch == '/' || ch == '-';
}

/* Return value: NULL when s[0..len) is a valid event type, else what is wrong with it. */
static const char *type_problem(const char *s, size_t len)
{
    if (len == 0)
        return "is empty";
    if (len > LG_CTL_TYPE_MAX)
        return "is longer than 64 bytes";
    for (size_t i = 0; i < len; i++)
        if (!type_char_ok(s[i]))
            return "may only hold A-Z a-z 0-9 _ . : / -";
    return NULL;
}

/* Return value: NULL when s[0..len) is a valid conflation key or item id, else the problem. */
static const char *key_problem(const char *s, size_t len)
{
    if (len == 0)
        return "is empty";
    if (len > LG_CTL_KEY_MAX)
        return "is longer than 256 bytes";
    if (memchr(s, '\0', len) != NULL)
        return "contains a NUL byte";
    if (!lg_utf8_valid(s, len))
        return "is not valid UTF-8";
    return NULL;
}

/* Percent-decode the {topic} path segment into topic (NUL-terminated). */
static int decode_topic(const char *seg, size_t seg_len, char *topic, size_t *topic_len,
                        struct lg_ctl_error *e)
{
    size_t bad = 0;
    int rc = lg_percent_decode(seg, seg_len, topic, LG_TOPIC_NAME_MAX + 1, false, &bad);
    if (rc == -1)
        return lg_ctl_fail(e, 400, "bad_request",
                    "the topic in the path has a malformed percent-escape at byte %zu; "
                    "write '%%' as %%25", bad);
    if (rc == -2)
        return lg_ctl_fail(e, 422, "invalid_topic", "topic name is longer than %d bytes",
                    LG_TOPIC_NAME_MAX);
    *topic_len = (size_t)rc;
    return 0;
}


/*
 * Percent-decode query parameter `name` into out (room for cap bytes of text plus a NUL).
 * Return value: 0 (also when it was not given: *len = 0), or -1 with e filled (malformed
 * escape, longer than cap).
 */
static int decode_query(const char *name, const struct lg_raw_value *raw, char *out, size_t cap,
                        size_t *len, struct lg_ctl_error *e)
{
    size_t bad = 0;
    *len = 0;
    if (!raw->present || raw->text == NULL)
        return 0;
    int rc = lg_percent_decode(raw->text, raw->len, out, cap + 1, false, &bad);
    if (rc == -1)
        return lg_ctl_fail(e, 400, "bad_request",
                    "query parameter \"%s\" has a malformed percent-escape at byte %zu", name,
                    bad);
    if (rc == -2)
        return lg_ctl_fail(e, 400, "bad_request", "query parameter \"%s\" is longer than %zu bytes",
                    name, cap);
    *len = (size_t)rc;
    return 0;
}


/* The optional ?tags= of a single publish, as canonical text into out->tags. */
static int event_tags(const struct lg_raw_value *raw, struct lg_parsed_event *out,
                      struct lg_ctl_error *e)
{
    char text[LG_TAGS_TEXT_MAX + 1], why[192];
    size_t len;
    if (decode_query("tags", raw, text, LG_TAGS_TEXT_MAX, &len, e) != 0)
        return -1;
    if (len == 0)
        return 0;
    if (lg_tags_parse(text, len, out->tags, &out->req.tags_len, why, sizeof why) != 0)
        return lg_ctl_fail(e, 400, "bad_request", "query parameter \"tags\": %s", why);
    out->req.tags = out->tags;
    return 0;
}

/* The optional ?type=, ?key= and ?tags= of a single publish, decoded into out's buffers, and the
 * Idempotency-Key header (borrowed from in). */
static int event_params(const struct lg_event_input *in, struct lg_parsed_event *out,
                        struct lg_ctl_error *e)
{
    struct lg_publish_req *req = &out->req;
    char *type = out->type, *key = out->key;
    const char *problem;
    if (decode_query("type", &in->type, type, LG_CTL_TYPE_MAX, &req->type_len, e) != 0)
        return -1;
    if (in->type.present) {
        if ((problem = type_problem(type, req->type_len)) != NULL)
            return lg_ctl_fail(e, 400, "bad_request",
                        "query parameter \"type\" %s; an event type is 1..64 bytes of "
                        "A-Z a-z 0-9 _ . : / -", problem);
        req->type = type;
    }
    if (decode_query("key", &in->key, key, LG_CTL_KEY_MAX, &req->key_len, e) != 0)
        return -1;
    if (in->key.present) {
        if ((problem = key_problem(key, req->key_len)) != NULL)
            return lg_ctl_fail(e, 400, "bad_request",
                        "query parameter \"key\" %s; a key is 1..256 bytes of UTF-8", problem);
        req->key = key;
    }
    const char *ik = in->idempotency_key;
    if (ik != NULL) {
        if ((problem = key_problem(ik, strlen(ik))) != NULL)
            return lg_ctl_fail(e, 400, "bad_request",
                        "header Idempotency-Key %s; a key is 1..256 bytes of UTF-8", problem);
        req->idempotency_key = ik;
        req->idempotency_key_len = strlen(ik);
    }
    return event_tags(&in->tags, out, e);
}


/* Content-Type is application/json, parameters and case aside. */
static bool is_json_content_type(const char *ct)
{
    if (ct == NULL)
        return false;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    size_t n = strcspn(ct, ";");
    while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    return n == strlen("application/json") && strncasecmp(ct, "application/json", n) == 0;
}


/*
 * Set req->data from the body: compact JSON (in *json_text, malloc'd) for application/json,
 * else the body itself as UTF-8 text. Return value: 0, or -1 with e filled.
 */
static int event_data(const struct lg_event_input *in, uint32_t max_event_bytes,
                      struct lg_publish_req *req, char **json_text, struct lg_ctl_error *e)
{
    const char *body = in->body != NULL ? in->body : "";
    size_t body_len = in->body != NULL ? in->body_len : 0;
    if (!is_json_content_type(in->content_type)) {
        if (!lg_utf8_valid(body, body_len))
            return lg_ctl_fail(e, 400, "bad_request",
                        "event body is not valid UTF-8; send UTF-8 text, or JSON with "
                        "Content-Type: application/json");
        req->data = body;
        req->data_len = body_len;
        return 0;
    }
    *json_text = malloc(body_len + 1);
    if (*json_text == NULL)
        return lg_ctl_fail(e, 503, "unavailable", "out of memory reading the event; retry");
    char why[160];
    switch (lg_json_text_compact(body, body_len, *json_text, &req->data_len, why, sizeof why)) {
    case LG_JSON_TEXT_OK: break;
    case LG_JSON_TEXT_NO_MEMORY:
        return lg_ctl_fail(e, 503, "unavailable", "out of memory reading the event; retry");
    case LG_JSON_TEXT_INVALID:
    case LG_JSON_TEXT_TOO_DEEP:
        return lg_ctl_fail(e, 400, "bad_request",
                    "body is not valid JSON (Content-Type is application/json): %s", why);
    }
    (*json_text)[req->data_len] = '\0';
    if (req->data_len > max_event_bytes)
        return lg_ctl_fail(e, 413, "payload_too_large",
                    "event data is %zu bytes as compact JSON; the limit is %u "
                    "(limits.max_event_bytes)", req->data_len, max_event_bytes);
    req->data = *json_text;
    req->data_is_json = true;
    return 0;
}


void lg_parsed_batch_release(struct lg_parsed_batch *b)
{
    for (size_t i = 0; b->texts != NULL && i < b->n; i++)
        free(b->texts[i]);
    free(b->texts);
    for (size_t i = 0; b->tags != NULL && i < b->n; i++)
        free(b->tags[i]);
    free(b->tags);
    free(b->reqs);
    free(b->items);
    for (size_t i = 0; i < b->root_count; i++)
        yajl_tree_free(b->roots[i]);
    free(b->roots);
}

/*
 * Parse text[0..len) (a copy is made NUL-terminated for yajl) into a tree added to b->roots.
 * what names the text in a refusal ("batch", "batch item 3 (line 4)").
 * Return value: 0 with *out set, or -1 with e filled.
 */
static int parse_tree(const char *text, size_t len, const char *what, struct lg_parsed_batch *b,
                      yajl_val *out, struct lg_ctl_error *e)
{
    struct lg_json_text_shape shape = lg_json_text_scan(text, len);
    if (shape.depth > LG_JSON_DEPTH_MAX)
        return lg_ctl_fail(e, 400, "bad_request", "%s is nested deeper than %d levels", what,
                           LG_JSON_DEPTH_MAX);
    if (shape.nul_escape)
        return lg_ctl_fail(e, 400, "bad_request",
                           "%s holds \\u0000 in a string, which a batch cannot carry; publish "
                           "that event alone (POST /v1/topics/{topic}/events)", what);
    yajl_val *roots = realloc(b->roots, (b->root_count + 1) * sizeof *roots);
    char *copy = malloc(len + 1);
    if (roots != NULL)
        b->roots = roots;
    if (roots == NULL || copy == NULL) {
        free(copy);
        return lg_ctl_fail(e, 503, "unavailable", "out of memory parsing the batch; retry");
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    char why[160] = "";
    yajl_val v = yajl_tree_parse(copy, why, sizeof why);
    free(copy);
    if (v == NULL) {
        why[strcspn(why, "\n")] = '\0'; /* yajl adds the text around the error below */
        return lg_ctl_fail(e, 400, "bad_request", "%s is not valid JSON: %s", what,
                           why[0] ? why : "out of memory");
    }
    b->roots[b->root_count++] = v;
    *out = v;
    return 0;
}

static int add_item(struct lg_parsed_batch *b, yajl_val item, size_t *cap, struct lg_ctl_error *e)
{
    if (b->n == *cap) {
        size_t want = *cap ? 2 * *cap : 16;
        yajl_val *items = realloc(b->items, want * sizeof *items);
        if (items == NULL)
            return lg_ctl_fail(e, 503, "unavailable", "out of memory parsing the batch; retry");
        b->items = items;
        *cap = want;
    }
    b->items[b->n++] = item;
    return 0;
}

static int parse_json_array(const char *body, size_t len, struct lg_parsed_batch *b,
                            struct lg_ctl_error *e)
{
    yajl_val root;
    if (parse_tree(body, len, "batch", b, &root, e) != 0)
        return -1;
    if (!YAJL_IS_ARRAY(root))
        return lg_ctl_fail(e, 400, "bad_request", "a batch is a JSON array of items, or NDJSON");
    size_t cap = 0;
    for (size_t i = 0; i < root->u.array.len; i++)
        if (add_item(b, root->u.array.values[i], &cap, e) != 0)
            return -1;
    return 0;
}

/* Parse NDJSON: one JSON value per non-blank line, '\n' or "\r\n" separated. */
static int parse_ndjson(const char *body, size_t len, struct lg_parsed_batch *b,
                        struct lg_ctl_error *e)
{
    size_t line_no = 0, cap = 0;
    for (size_t pos = 0; pos < len; line_no++) {
        const char *line = body + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = nl != NULL ? (size_t)(nl - line) : len - pos;
        pos += n + (nl != NULL);
        size_t blank = 0;
        while (blank < n && (line[blank] == ' ' || line[blank] == '\t' || line[blank] == '\r'))
            blank++;
        if (blank == n)
            continue; /* blank line */
        char what[64];
        e->index = (long)b->n;
        snprintf(what, sizeof what, "batch item %zu (line %zu)", b->n, line_no + 1);
        yajl_val item;
        if (parse_tree(line, n, what, b, &item, e) != 0 || add_item(b, item, &cap, e) != 0)
            return -1;
    }
    e->index = -1;
    return 0;
}

/* The member `name` of an item object, or NULL. */
static yajl_val member(yajl_val item, const char *name)
{
    for (size_t k = 0; k < item->u.object.len; k++)
        if (strcmp(item->u.object.keys[k], name) == 0)
            return item->u.object.values[k];
    return NULL;
}

/* An optional string member: NULL/absent = not given. Return value: 0, or -1 with e filled. */
static int item_string(yajl_val item, const char *name, size_t i, const char **s, size_t *len,
                       struct lg_ctl_error *e)
{
    yajl_val v = member(item, name);
    *s = NULL;
    *len = 0;
    if (v == NULL || YAJL_IS_NULL(v))
        return 0;
    if (!YAJL_IS_STRING(v))
        return lg_ctl_fail(e, 400, "bad_request", "batch item %zu: \"%s\" must be a string", i, name);
    *s = v->u.string;
    *len = strlen(v->u.string);
    return 0;
}

/* Only the known members, each at most once. */
static int item_keys(yajl_val item, size_t i, struct lg_ctl_error *e)
{
    static const char *const known[] = {"topic", "data", "type", "key", "id", "tags"};
    enum { KNOWN = sizeof known / sizeof known[0] };
    bool seen[KNOWN] = {false};
    for (size_t k = 0; k < item->u.object.len; k++) {
        const char *name = item->u.object.keys[k];
        size_t j = 0;
        while (j < KNOWN && strcmp(name, known[j]) != 0)
            j++;
        if (j == KNOWN)
            return lg_ctl_fail(e, 400, "bad_request",
                        "batch item %zu has an unknown key \"%.64s\"; an item may hold "
                        "topic, data, type, key, id and tags", i, name);
        if (seen[j])
            return lg_ctl_fail(e, 400, "bad_request", "batch item %zu has \"%s\" twice", i,
                               name);
        seen[j] = true;
    }
    return 0;
}

static int item_topic(yajl_val item, size_t i, struct lg_publish_req *req,
                      struct lg_ctl_error *e)
{
    if (item_string(item, "topic", i, &req->topic, &req->topic_len, e) != 0)
        return -1;
    if (req->topic == NULL)
        return lg_ctl_fail(e, 400, "bad_request", "batch item %zu has no \"topic\"", i);
    int tl = req->topic_len > 128 ? 128 : (int)req->topic_len;
    if (req->topic_len > 0 && req->topic[0] == '$')
        return lg_ctl_fail(e, 422, "invalid_topic",
                    "batch item %zu: topic \"%.*s\": names starting with '$' are reserved for "
                    "the gateway; publish to a name without it", i, tl, req->topic);
    const char *problem = lg_topic_name_problem(req->topic, req->topic_len);
    if (problem != NULL)
        return lg_ctl_fail(e, 422, "invalid_topic", "batch item %zu: invalid topic \"%.*s\": %s", i,
                    tl, req->topic, problem);
    return 0;
}

static int item_data(uint32_t max_event_bytes, yajl_val item, size_t i,
                     struct lg_publish_req *req, char **text, struct lg_ctl_error *e)
{
    yajl_val data = member(item, "data");
    if (data == NULL)
        return lg_ctl_fail(e, 400, "bad_request", "batch item %zu has no \"data\"", i);
    if (YAJL_IS_STRING(data)) {
        req->data = data->u.string;
        req->data_len = strlen(data->u.string);
    } else {
        *text = lg_json_text_of_tree(data, &req->data_len);
        if (*text == NULL)
            return lg_ctl_fail(e, 503, "unavailable", "out of memory encoding the batch; retry");
        req->data = *text;
        req->data_is_json = true;
    }
    if (req->data_len > max_event_bytes)
        return lg_ctl_fail(e, 413, "payload_too_large",
                    "batch item %zu: data is %zu bytes; the limit is %u "
                    "(limits.max_event_bytes)", i, req->data_len, max_event_bytes);
    return 0;
}

static int item_options(yajl_val item, size_t i, struct lg_publish_req *req,
                        struct lg_ctl_error *e)
{
    const char *id, *problem;
    size_t id_len;
    if (item_string(item, "type", i, &req->type, &req->type_len, e) != 0 ||
        item_string(item, "key", i, &req->key, &req->key_len, e) != 0 ||
        item_string(item, "id", i, &id, &id_len, e) != 0)
        return -1;
    if (req->type != NULL && (problem = type_problem(req->type, req->type_len)) != NULL)
        return lg_ctl_fail(e, 400, "bad_request",
                    "batch item %zu: \"type\" %s; an event type is 1..64 bytes of "
                    "A-Z a-z 0-9 _ . : / -", i, problem);
    if (req->key != NULL && (problem = key_problem(req->key, req->key_len)) != NULL)
        return lg_ctl_fail(e, 400, "bad_request",
                    "batch item %zu: \"key\" %s; a key is 1..256 bytes of UTF-8", i, problem);
    if (id != NULL && (problem = key_problem(id, id_len)) != NULL)
        return lg_ctl_fail(e, 400, "bad_request",
                    "batch item %zu: \"id\" %s; an id is 1..256 bytes of UTF-8", i, problem);
    req->idempotency_key = id;
    req->idempotency_key_len = id_len;
    return 0;
}

/* The optional "tags" object of an item ({"key":"value",...}), as canonical text in *text
 * (malloc'd). */
static int item_tags(yajl_val item, size_t i, struct lg_publish_req *req, char **text,
                     struct lg_ctl_error *e)
{
    yajl_val tags = member(item, "tags");
    if (tags == NULL || YAJL_IS_NULL(tags))
        return 0;
    if (!YAJL_IS_OBJECT(tags))
        return lg_ctl_fail(e, 400, "bad_request",
                           "batch item %zu: \"tags\" must be an object of string values", i);
    struct lg_tags_builder b = {.count = 0};
    char why[192];
    for (size_t k = 0; k < tags->u.object.len; k++) {
        const char *key = tags->u.object.keys[k];
        yajl_val v = tags->u.object.values[k];
        if (!YAJL_IS_STRING(v))
            return lg_ctl_fail(e, 400, "bad_request",
                               "batch item %zu: tag \"%.64s\" must have a string value", i, key);
        if (lg_tags_add(&b, key, strlen(key), v->u.string, strlen(v->u.string), why,
                        sizeof why) != NULL)
            return lg_ctl_fail(e, 400, "bad_request", "batch item %zu: %s", i, why);
    }
    if (b.count == 0)
        return 0;
    *text = malloc(LG_TAGS_TEXT_MAX + 1);
    if (*text == NULL)
        return lg_ctl_fail(e, 503, "unavailable", "out of memory validating the batch; retry");
    req->tags_len = lg_tags_canonical(&b, *text);
    req->tags = *text;
    return 0;
}

/* Validate every item into b->reqs before anything is published. */
static int batch_validate(uint32_t max_event_bytes, struct lg_parsed_batch *b,
                          struct lg_ctl_error *e)
{
    if (b->n == 0)
        return lg_ctl_fail(e, 400, "bad_request",
                    "the batch holds no items; send {\"topic\":...,\"data\":...} objects");
    b->reqs = calloc(b->n, sizeof *b->reqs);
    b->texts = calloc(b->n, sizeof *b->texts);
    b->tags = calloc(b->n, sizeof *b->tags);
    if (b->reqs == NULL || b->texts == NULL || b->tags == NULL)
        return lg_ctl_fail(e, 503, "unavailable", "out of memory validating the batch; retry");
    for (size_t i = 0; i < b->n; i++) {
        yajl_val item = b->items[i];
        e->index = (long)i;
        if (!YAJL_IS_OBJECT(item))
            return lg_ctl_fail(e, 400, "bad_request", "batch item %zu is not a JSON object", i);
        if (item_keys(item, i, e) != 0 || item_topic(item, i, &b->reqs[i], e) != 0 ||
            item_data(max_event_bytes, item, i, &b->reqs[i], &b->texts[i], e) != 0 ||
            item_options(item, i, &b->reqs[i], e) != 0 ||
            item_tags(item, i, &b->reqs[i], &b->tags[i], e) != 0)
            return -1;
    }
    e->index = -1;
    return 0;
}


int lg_parse_event(const struct lg_event_input *in, uint32_t max_event_bytes,
                   struct lg_parsed_event *out, struct lg_ctl_error *e)
{
    memset(out, 0, sizeof *out);
    out->req.topic = out->topic;
    if (decode_topic(in->topic_segment, in->topic_segment_len, out->topic, &out->req.topic_len,
                     e) != 0 ||
        event_params(in, out, e) != 0 ||
        event_data(in, max_event_bytes, &out->req, &out->json_text, e) != 0)
        return -1;
    return 0;
}

void lg_parsed_event_release(struct lg_parsed_event *ev)
{
    free(ev->json_text);
    ev->json_text = NULL;
}

int lg_parse_batch(const char *body, size_t len, uint32_t max_event_bytes,
                   struct lg_parsed_batch *b, struct lg_ctl_error *e)
{
    memset(b, 0, sizeof *b);
    if (body == NULL)
        body = "", len = 0;
    size_t ws = 0;
    while (ws < len && (body[ws] == ' ' || body[ws] == '\t' || body[ws] == '\r' || body[ws] == '\n'))
        ws++;
    int parsed = ws < len && body[ws] == '[' ? parse_json_array(body, len, b, e)
                                             : parse_ndjson(body, len, b, e);
    if (parsed != 0 || batch_validate(max_event_bytes, b, e) != 0)
        return -1;
    return 0;
}
