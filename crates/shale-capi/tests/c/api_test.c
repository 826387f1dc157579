/*
 * Exercises every function of shale.h, including its error paths (NULL
 * pointers, bad lengths, wrong handle kinds, double frees, use after close,
 * read-only writes), against the static library. scripts/capi.sh builds and
 * runs it under AddressSanitizer (with leak detection) and
 * UndefinedBehaviorSanitizer: any report fails the run.
 *
 *   api_test            run every check; exit status 0 when all pass
 */
#define _GNU_SOURCE
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shale.h"

static int checks = 0;
static int failures = 0;

#define CHECK(cond)                                                                \
    do {                                                                           \
        checks++;                                                                  \
        if (!(cond)) {                                                             \
            failures++;                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                          \
    } while (0)

/* Every call below passes ERR as its errmsg: EXPECT points it at a message of
 * its own, checks the code, checks that a failure came with a message and a
 * success without one, and frees the message. */
static char **msg_slot;
#define ERR msg_slot

#define EXPECT(want, call)                                                         \
    do {                                                                           \
        char *msg_ = (char *)0x1; /* every function resets it on entry */          \
        msg_slot = &msg_;                                                          \
        shale_code_t got_ = (call);                                                \
        msg_slot = NULL;                                                           \
        checks++;                                                                  \
        if (got_ != (want)) {                                                      \
            failures++;                                                            \
            fprintf(stderr, "%s:%d: %s returned %s, want %s (%s)\n", __FILE__, __LINE__, \
                    #call, shale_code_name(got_), shale_code_name(want),           \
                    msg_ && msg_ != (char *)0x1 ? msg_ : "no message");           \
        } else if ((want) != SHALE_OK && msg_ == NULL) {                           \
            failures++;                                                            \
            fprintf(stderr, "%s:%d: %s failed without a message\n", __FILE__, __LINE__, #call); \
        } else if ((want) == SHALE_OK && msg_ != NULL) {                           \
            failures++;                                                            \
            fprintf(stderr, "%s:%d: %s succeeded but left errmsg set\n", __FILE__, __LINE__, #call); \
        }                                                                          \
        if (msg_ != (char *)0x1) shale_free(msg_);                                 \
    } while (0)

/* As EXPECT(SHALE_INVALID_ARGUMENT, call), and the message must contain
 * `needle`. */
#define EXPECT_REFUSED(needle, call)                                               \
    do {                                                                           \
        char *msg_ = (char *)0x1;                                                  \
        msg_slot = &msg_;                                                          \
        shale_code_t got_ = (call);                                                \
        msg_slot = NULL;                                                           \
        checks++;                                                                  \
        if (got_ != SHALE_INVALID_ARGUMENT) {                                      \
            failures++;                                                            \
            fprintf(stderr, "%s:%d: %s returned %s, want SHALE_INVALID_ARGUMENT\n", \
                    __FILE__, __LINE__, #call, shale_code_name(got_));             \
        } else if (msg_ == NULL || msg_ == (char *)0x1 || strstr(msg_, (needle)) == NULL) { \
            failures++;                                                            \
            fprintf(stderr, "%s:%d: %s: message \"%s\" does not name \"%s\"\n", __FILE__, \
                    __LINE__, #call, msg_ && msg_ != (char *)0x1 ? msg_ : "(none)", (needle)); \
        }                                                                          \
        if (msg_ != (char *)0x1) shale_free(msg_);                                 \
    } while (0)

#define K(s) (const uint8_t *)(s), strlen(s)

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

static void remove_tree(const char *path) { nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

static int value_is(shale_db_t *db, const char *key, const char *want) {
    uint8_t *value = NULL;
    size_t len = 0;
    bool found = false;
    if (shale_get(db, K(key), &value, &len, &found, NULL) != SHALE_OK) return 0;
    int ok = want == NULL ? !found : (found && len == strlen(want) && memcmp(value, want, len) == 0);
    if (found) shale_free(value);
    return ok;
}

static int entry_is(const shale_entry_t *e, const char *key, const char *value) {
    if (key == NULL) return !e->valid && e->key == NULL && e->key_len == 0;
    return e->valid && e->key_len == strlen(key) && memcmp(e->key, key, e->key_len) == 0 &&
           (value == NULL || (e->value_len == strlen(value) && memcmp(e->value, value, e->value_len) == 0));
}

/* True if the pinned value holds `want` (NULL: the handle is NULL). */
static int pinned_is(const shale_pinned_t *p, const char *want) {
    size_t len = 12345;
    const uint8_t *data = shale_pinned_data(p, &len);
    if (want == NULL) return p == NULL && data == NULL && len == 0;
    return data != NULL && len == strlen(want) && memcmp(data, want, len) == 0;
}

static void test_codes(void) {
    CHECK(strcmp(shale_code_name(SHALE_OK), "SHALE_OK") == 0);
    CHECK(strcmp(shale_code_name(SHALE_CLOSED), "SHALE_CLOSED") == 0);
    CHECK(strcmp(shale_code_name(SHALE_INTERNAL), "SHALE_INTERNAL") == 0);
    CHECK(strcmp(shale_code_name(-1), "SHALE_UNKNOWN") == 0);
    CHECK(strcmp(shale_code_name(SHALE_LIVE_HANDLES), "SHALE_LIVE_HANDLES") == 0);
    CHECK(strcmp(shale_code_name(1000), "SHALE_UNKNOWN") == 0);
    shale_free(NULL); /* ignored */
}

static void test_options(void) {
    shale_options_t *o = NULL;
    EXPECT(SHALE_INVALID_ARGUMENT, shale_options_create(NULL, ERR));
    EXPECT(SHALE_OK, shale_options_create(&o, ERR));
    CHECK(o != NULL);
    EXPECT(SHALE_OK, shale_options_set_create_if_missing(o, true, ERR));
    EXPECT(SHALE_OK, shale_options_set_error_if_exists(o, false, ERR));
    EXPECT(SHALE_OK, shale_options_set_block_cache_bytes(o, 8 << 20, ERR));
    EXPECT(SHALE_OK, shale_options_set_write_buffer_size(o, 1 << 20, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_options_set_write_buffer_size(o, 0, ERR));
    EXPECT(SHALE_OK, shale_options_set_max_open_files(o, 100, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_options_set_max_open_files(o, 0, ERR));
    EXPECT(SHALE_OK, shale_options_set_max_background_jobs(o, 1, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_options_set_max_background_jobs(o, 0, ERR));
    EXPECT(SHALE_OK, shale_options_set_max_background_jobs(o, 256, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_options_set_max_background_jobs(o, 257, ERR));
    EXPECT(SHALE_OK, shale_options_set_max_background_jobs(o, 1, ERR));
    EXPECT(SHALE_OK, shale_options_set_filter_policy(o, SHALE_FILTER_BLOOM, 10, SHALE_FILTER_LEVELS_ALL, ERR));
    EXPECT(SHALE_OK, shale_options_set_filter_policy(o, SHALE_FILTER_NONE, 0, SHALE_FILTER_LEVELS_ALL_BUT_LAST, ERR));
    EXPECT(SHALE_OK, shale_options_set_filter_policy(o, SHALE_FILTER_BINARY_FUSE, 9, SHALE_FILTER_LEVELS_ALL_BUT_LAST, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_options_set_filter_policy(o, 7, 10, SHALE_FILTER_LEVELS_ALL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_options_set_filter_policy(o, SHALE_FILTER_BLOOM, 0, SHALE_FILTER_LEVELS_ALL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_options_set_filter_policy(o, SHALE_FILTER_BLOOM, 10, 5, ERR));
    EXPECT(SHALE_OK, shale_options_set_sync(o, false, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_options_set_sync(NULL, true, ERR));
    /* A handle of another kind is refused, not misused. */
    shale_batch_t *b = NULL;
    EXPECT(SHALE_OK, shale_batch_create(&b, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_options_set_sync((shale_options_t *)b, true, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_options_free((shale_options_t *)b, ERR));
    EXPECT(SHALE_OK, shale_batch_free(b, ERR));
    EXPECT(SHALE_OK, shale_options_free(o, ERR));
    /* A second free is detected: the handle is no longer registered. */
    EXPECT(SHALE_INVALID_ARGUMENT, shale_options_free(o, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_options_free(NULL, ERR));
    /* errmsg is optional. */
    CHECK(shale_options_free(NULL, NULL) == SHALE_INVALID_ARGUMENT);
}

/* The engine's tuning options: each valid value is taken and a database opens,
 * writes, flushes, compacts and reads with it; each invalid one is refused at
 * once with a message naming it, and leaves the options usable. */
static void test_engine_options(const char *dir) {
    char path[4096];
    shale_options_t *o = NULL;
    shale_db_t *db = NULL;
    EXPECT(SHALE_OK, shale_options_create(&o, ERR));

    EXPECT(SHALE_OK, shale_options_set_max_subcompactions(o, 1, ERR));
    EXPECT(SHALE_OK, shale_options_set_max_subcompactions(o, 64, ERR));
    EXPECT(SHALE_OK, shale_options_set_max_subcompactions(o, 4, ERR));
    EXPECT_REFUSED("max subcompactions 0 is not within 1 to 64", shale_options_set_max_subcompactions(o, 0, ERR));
    EXPECT_REFUSED("max subcompactions 65 is not within 1 to 64", shale_options_set_max_subcompactions(o, 65, ERR));
    EXPECT_REFUSED("max subcompactions", shale_options_set_max_subcompactions(o, SIZE_MAX, ERR));

    EXPECT(SHALE_OK, shale_options_set_delayed_write_rate(o, 1, ERR));
    EXPECT(SHALE_OK, shale_options_set_delayed_write_rate(o, 8 << 20, ERR));
    EXPECT_REFUSED("delayed write rate 0", shale_options_set_delayed_write_rate(o, 0, ERR));

    EXPECT(SHALE_OK, shale_options_set_compaction_rate_limit(o, 0, ERR)); /* no limit */
    EXPECT(SHALE_OK, shale_options_set_compaction_rate_limit(o, UINT64_MAX, ERR));
    EXPECT(SHALE_OK, shale_options_set_compaction_rate_limit(o, 64 << 20, ERR));

    EXPECT(SHALE_OK, shale_options_set_compaction_readahead_bytes(o, 0, ERR)); /* block by block */
    EXPECT(SHALE_OK, shale_options_set_compaction_readahead_bytes(o, 64 << 20, ERR));
    EXPECT(SHALE_OK, shale_options_set_compaction_readahead_bytes(o, 256 << 10, ERR));
    EXPECT_REFUSED("compaction readahead 67108865 bytes", shale_options_set_compaction_readahead_bytes(o, (64 << 20) + 1, ERR));
    EXPECT_REFUSED("compaction readahead", shale_options_set_compaction_readahead_bytes(o, SIZE_MAX, ERR));

    EXPECT(SHALE_OK, shale_options_set_table_metadata(o, SHALE_TABLE_METADATA_ALL_BUT_LAST, ERR));
    EXPECT_REFUSED("unknown table metadata placement 4", shale_options_set_table_metadata(o, 4, ERR));
    EXPECT_REFUSED("unknown table metadata placement -1", shale_options_set_table_metadata(o, -1, ERR));

    EXPECT(SHALE_OK, shale_options_set_compaction_nice(o, 19, ERR));
    EXPECT(SHALE_OK, shale_options_set_compaction_nice(o, 0, ERR));
    EXPECT_REFUSED("compaction nice value 20", shale_options_set_compaction_nice(o, 20, ERR));

    EXPECT(SHALE_OK, shale_options_set_l0_triggers(o, 1, 1, 1, ERR));
    EXPECT(SHALE_OK, shale_options_set_l0_triggers(o, 2, 3, 4, ERR));
    EXPECT(SHALE_OK, shale_options_set_l0_triggers(o, 0, 0, 0, ERR)); /* the defaults */
    EXPECT_REFUSED("L0 triggers 0, 3, 36", shale_options_set_l0_triggers(o, 0, 3, 0, ERR));
    EXPECT_REFUSED("L0 triggers 9, 8, 36", shale_options_set_l0_triggers(o, 9, 8, 36, ERR));
    EXPECT_REFUSED("L0 triggers 8, 20, 19", shale_options_set_l0_triggers(o, 8, 20, 19, ERR));
    EXPECT_REFUSED("L0 triggers 21, 20, 36", shale_options_set_l0_triggers(o, 21, 0, 0, ERR));

    /* NULL and the wrong kind of handle. */
    EXPECT(SHALE_INVALID_ARGUMENT, shale_options_set_max_subcompactions(NULL, 2, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_options_set_l0_triggers(NULL, 1, 2, 3, ERR));
    shale_batch_t *b = NULL;
    EXPECT(SHALE_OK, shale_batch_create(&b, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_options_set_table_metadata((shale_options_t *)b, SHALE_TABLE_METADATA_ALL, ERR));
    EXPECT(SHALE_OK, shale_batch_free(b, ERR));

    /* The refusals left the last valid values: a database opens with them (a
     * small write buffer, so that the data is flushed and compacted). */
    EXPECT(SHALE_OK, shale_options_set_write_buffer_size(o, 64 << 10, ERR));
    snprintf(path, sizeof path, "%s/tuned", dir);
    EXPECT(SHALE_OK, shale_open(path, o, &db, ERR));
    char key[32], value[64];
    for (int i = 0; i < 2000; i++) {
        snprintf(key, sizeof key, "tuned%06d", i);
        snprintf(value, sizeof value, "value-%d-padding-padding-padding", i);
        EXPECT(SHALE_OK, shale_put(db, K(key), K(value), ERR));
    }
    EXPECT(SHALE_OK, shale_flush(db, ERR));
    EXPECT(SHALE_OK, shale_compact_all(db, ERR));
    CHECK(value_is(db, "tuned001234", "value-1234-padding-padding-padding"));
    EXPECT(SHALE_OK, shale_close(db, ERR));
    EXPECT(SHALE_OK, shale_db_free(db, ERR));

    /* Every table metadata placement opens the database and reads it. */
    const int32_t placements[] = {SHALE_TABLE_METADATA_NONE, SHALE_TABLE_METADATA_INDEX,
                                  SHALE_TABLE_METADATA_ALL_BUT_LAST, SHALE_TABLE_METADATA_ALL};
    for (size_t i = 0; i < sizeof placements / sizeof *placements; i++) {
        EXPECT(SHALE_OK, shale_options_set_table_metadata(o, placements[i], ERR));
        db = NULL;
        EXPECT(SHALE_OK, shale_open(path, o, &db, ERR));
        CHECK(value_is(db, "tuned000007", "value-7-padding-padding-padding"));
        CHECK(value_is(db, "tuned999999", NULL));
        EXPECT(SHALE_OK, shale_close(db, ERR));
        EXPECT(SHALE_OK, shale_db_free(db, ERR));
    }
    EXPECT(SHALE_OK, shale_options_free(o, ERR));
}

static shale_db_t *open_db(const char *path, bool read_only) {
    shale_options_t *o = NULL;
    shale_db_t *db = NULL;
    EXPECT(SHALE_OK, shale_options_create(&o, ERR));
    EXPECT(SHALE_OK, shale_options_set_write_buffer_size(o, 256 << 10, ERR));
    EXPECT(SHALE_OK, shale_options_set_block_cache_bytes(o, 4 << 20, ERR));
    if (read_only)
        EXPECT(SHALE_OK, shale_open_read_only(path, o, &db, ERR));
    else
        EXPECT(SHALE_OK, shale_open(path, o, &db, ERR));
    EXPECT(SHALE_OK, shale_options_free(o, ERR));
    return db;
}

static void test_reads_and_writes(shale_db_t *db) {
    EXPECT(SHALE_OK, shale_put(db, K("alice"), K("10"), ERR));
    EXPECT(SHALE_OK, shale_put(db, K("bob"), K("20"), ERR));
    EXPECT(SHALE_OK, shale_put(db, K("empty-value"), NULL, 0, ERR));
    CHECK(value_is(db, "alice", "10"));
    CHECK(value_is(db, "bob", "20"));
    CHECK(value_is(db, "empty-value", ""));
    CHECK(value_is(db, "nobody", NULL));

    /* A missing key is no error: found says so, value is untouched. */
    uint8_t *value = (uint8_t *)0x1;
    size_t len = 99;
    bool found = true;
    EXPECT(SHALE_OK, shale_get(db, K("nobody"), &value, &len, &found, ERR));
    CHECK(!found && value == (uint8_t *)0x1 && len == 99);

    /* Into a caller's buffer: too small tells the length; 0 only looks. */
    uint8_t buf[4];
    EXPECT(SHALE_OK, shale_get_into(db, K("alice"), buf, sizeof buf, &len, &found, ERR));
    CHECK(found && len == 2 && memcmp(buf, "10", 2) == 0);
    EXPECT(SHALE_OK, shale_put(db, K("long"), K("0123456789"), ERR));
    EXPECT(SHALE_OK, shale_get_into(db, K("long"), buf, sizeof buf, &len, &found, ERR));
    CHECK(found && len == 10 && memcmp(buf, "0123", 4) == 0);
    EXPECT(SHALE_OK, shale_get_into(db, K("long"), NULL, 0, &len, &found, ERR));
    CHECK(found && len == 10);
    EXPECT(SHALE_OK, shale_get_into(db, K("nobody"), buf, sizeof buf, &len, &found, ERR));
    CHECK(!found);

    /* Bad arguments. */
    EXPECT(SHALE_INVALID_ARGUMENT, shale_put(db, NULL, 3, K("x"), ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_put(db, K("k"), NULL, 3, ERR));
    /* The empty key is a key like any other. */
    EXPECT(SHALE_OK, shale_put(db, NULL, 0, K("empty"), ERR));
    CHECK(value_is(db, "", "empty"));
    EXPECT(SHALE_OK, shale_delete(db, NULL, 0, ERR));
    CHECK(value_is(db, "", NULL));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_put(NULL, K("k"), K("v"), ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_delete(db, NULL, 1, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_get(db, NULL, 2, &value, &len, &found, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_get(db, K("alice"), NULL, &len, &found, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_get(db, K("alice"), &value, NULL, &found, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_get(db, K("alice"), &value, &len, NULL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_get_into(db, K("alice"), NULL, 4, &len, &found, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_get_into(db, K("alice"), buf, 4, NULL, &found, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_get((shale_db_t *)buf, K("alice"), &value, &len, &found, ERR));

    EXPECT(SHALE_OK, shale_delete(db, K("bob"), ERR));
    EXPECT(SHALE_OK, shale_delete(db, K("never-there"), ERR));
    CHECK(value_is(db, "bob", NULL));
}

static void test_batches(shale_db_t *db) {
    shale_batch_t *b = NULL;
    size_t n = 0;
    EXPECT(SHALE_INVALID_ARGUMENT, shale_batch_create(NULL, ERR));
    EXPECT(SHALE_OK, shale_batch_create(&b, ERR));
    EXPECT(SHALE_OK, shale_batch_count(b, &n, ERR));
    CHECK(n == 0);
    EXPECT(SHALE_OK, shale_batch_put(b, K("carol"), K("30"), ERR));
    EXPECT(SHALE_OK, shale_batch_put(b, K("dave"), K("40"), ERR));
    EXPECT(SHALE_OK, shale_batch_delete(b, K("alice"), ERR));
    EXPECT(SHALE_OK, shale_batch_count(b, &n, ERR));
    CHECK(n == 3);
    size_t bytes = 0;
    EXPECT(SHALE_OK, shale_batch_size(b, &bytes, ERR));
    CHECK(bytes > 5 + 4 + 5);
    EXPECT(SHALE_INVALID_ARGUMENT, shale_batch_put(b, NULL, 1, K("v"), ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_batch_delete(b, NULL, 1, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_batch_count(b, NULL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_batch_size(NULL, &bytes, ERR));
    /* Nothing is visible before the write; all of it after. */
    CHECK(value_is(db, "carol", NULL));
    EXPECT(SHALE_OK, shale_write(db, b, true, ERR));
    CHECK(value_is(db, "carol", "30") && value_is(db, "dave", "40") && value_is(db, "alice", NULL));
    /* The batch is unchanged by the write; cleared it is empty. */
    EXPECT(SHALE_OK, shale_batch_count(b, &n, ERR));
    CHECK(n == 3);
    EXPECT(SHALE_OK, shale_batch_clear(b, ERR));
    EXPECT(SHALE_OK, shale_batch_count(b, &n, ERR));
    CHECK(n == 0);
    /* A batch may hold the empty key. */
    EXPECT(SHALE_OK, shale_batch_put(b, K("erin"), K("50"), ERR));
    EXPECT(SHALE_OK, shale_batch_put(b, NULL, 0, K("x"), ERR));
    EXPECT(SHALE_OK, shale_write(db, b, false, ERR));
    CHECK(value_is(db, "erin", "50"));
    CHECK(value_is(db, "", "x"));
    EXPECT(SHALE_OK, shale_batch_clear(b, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_write(db, NULL, false, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_write(NULL, b, false, ERR));
    EXPECT(SHALE_OK, shale_batch_free(b, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_batch_free(b, ERR));
}

/* Collects the keys of a walk into `out` as "k1,k2," and returns it. */
static const char *walk(shale_iterator_t *it, bool forward, char *out, size_t cap) {
    shale_entry_t e;
    out[0] = 0;
    shale_code_t c = forward ? shale_iterator_seek_to_first(it, &e, NULL) : shale_iterator_seek_to_last(it, &e, NULL);
    while (c == SHALE_OK && e.valid) {
        strncat(out, (const char *)e.key, e.key_len < cap - strlen(out) - 2 ? e.key_len : 0);
        strcat(out, ",");
        c = forward ? shale_iterator_next(it, &e, NULL) : shale_iterator_prev(it, &e, NULL);
    }
    if (c != SHALE_OK) return "error";
    return out;
}

static void test_iterators(shale_db_t *db) {
    const char *keys[] = {"k1", "k2", "k3", "ka1", "ka2", "kb1", "z"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) EXPECT(SHALE_OK, shale_put(db, K(keys[i]), K("v"), ERR));
    EXPECT(SHALE_OK, shale_put(db, K("k2"), K("two"), ERR));

    char out[256];
    shale_iterator_t *it = NULL;
    shale_read_options_t ro;
    memset(&ro, 0, sizeof ro);
    ro.lower_bound = (const uint8_t *)"k";
    ro.lower_bound_len = 1;
    ro.upper_bound = (const uint8_t *)"kb";
    ro.upper_bound_len = 2;
    EXPECT(SHALE_OK, shale_iterator_create(db, &ro, &it, ERR));
    CHECK(strcmp(walk(it, true, out, sizeof out), "k1,k2,k3,ka1,ka2,") == 0);
    CHECK(strcmp(walk(it, false, out, sizeof out), "ka2,ka1,k3,k2,k1,") == 0);

    /* Seeks, and every accessor. */
    shale_entry_t e;
    EXPECT(SHALE_OK, shale_iterator_seek(it, K("k15"), &e, ERR));
    CHECK(entry_is(&e, "k2", "two"));
    bool valid = false;
    EXPECT(SHALE_OK, shale_iterator_valid(it, &valid, ERR));
    CHECK(valid);
    const uint8_t *p = NULL;
    size_t n = 0;
    EXPECT(SHALE_OK, shale_iterator_key(it, &p, &n, ERR));
    CHECK(n == 2 && memcmp(p, "k2", 2) == 0);
    EXPECT(SHALE_OK, shale_iterator_value(it, &p, &n, ERR));
    CHECK(n == 3 && memcmp(p, "two", 3) == 0);
    EXPECT(SHALE_OK, shale_iterator_entry(it, &e, ERR));
    CHECK(entry_is(&e, "k2", "two"));
    EXPECT(SHALE_OK, shale_iterator_seek_for_prev(it, K("ka15"), &e, ERR));
    CHECK(entry_is(&e, "ka1", "v"));
    EXPECT(SHALE_OK, shale_iterator_prev(it, NULL, ERR)); /* entry is optional */
    EXPECT(SHALE_OK, shale_iterator_entry(it, &e, ERR));
    CHECK(entry_is(&e, "k3", "v"));
    /* Out of the bounds: the seek lands at the end. */
    EXPECT(SHALE_OK, shale_iterator_seek(it, K("z"), &e, ERR));
    CHECK(entry_is(&e, NULL, NULL));
    EXPECT(SHALE_OK, shale_iterator_valid(it, &valid, ERR));
    CHECK(!valid);
    EXPECT(SHALE_INVALID_ARGUMENT, shale_iterator_key(it, &p, &n, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_iterator_value(it, &p, &n, ERR));
    EXPECT(SHALE_OK, shale_iterator_next(it, &e, ERR)); /* no-op at the end */
    EXPECT(SHALE_OK, shale_iterator_status(it, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_iterator_seek(it, NULL, 1, &e, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_iterator_seek_for_prev(it, NULL, 1, &e, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_iterator_valid(it, NULL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_iterator_entry(it, NULL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_iterator_key(it, NULL, &n, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_iterator_value(it, &p, NULL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_iterator_next(NULL, &e, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_iterator_status(NULL, ERR));
    EXPECT(SHALE_OK, shale_iterator_free(it, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_iterator_free(it, ERR));

    /* A prefix, narrowed further by a lower bound (geth's prefix + start). */
    memset(&ro, 0, sizeof ro);
    ro.prefix = (const uint8_t *)"ka";
    ro.prefix_len = 2;
    EXPECT(SHALE_OK, shale_iterator_create(db, &ro, &it, ERR));
    CHECK(strcmp(walk(it, true, out, sizeof out), "ka1,ka2,") == 0);
    CHECK(strcmp(walk(it, false, out, sizeof out), "ka2,ka1,") == 0);
    EXPECT(SHALE_OK, shale_iterator_free(it, ERR));
    ro.lower_bound = (const uint8_t *)"ka2";
    ro.lower_bound_len = 3;
    EXPECT(SHALE_OK, shale_iterator_create(db, &ro, &it, ERR));
    CHECK(strcmp(walk(it, true, out, sizeof out), "ka2,") == 0);
    EXPECT(SHALE_OK, shale_iterator_free(it, ERR));

    /* No options: everything. An empty upper bound: nothing. */
    EXPECT(SHALE_OK, shale_iterator_create(db, NULL, &it, ERR));
    CHECK(strstr(walk(it, true, out, sizeof out), "k1,k2,k3,ka1,ka2,kb1,") != NULL);
    EXPECT(SHALE_OK, shale_iterator_free(it, ERR));
    memset(&ro, 0, sizeof ro);
    ro.upper_bound = (const uint8_t *)"";
    EXPECT(SHALE_OK, shale_iterator_create(db, &ro, &it, ERR));
    CHECK(strcmp(walk(it, true, out, sizeof out), "") == 0);
    EXPECT(SHALE_OK, shale_iterator_free(it, ERR));

    /* Bad options. */
    memset(&ro, 0, sizeof ro);
    ro.prefix_len = 3;
    EXPECT(SHALE_INVALID_ARGUMENT, shale_iterator_create(db, &ro, &it, ERR));
    memset(&ro, 0, sizeof ro);
    ro.lower_bound_len = 1;
    EXPECT(SHALE_INVALID_ARGUMENT, shale_iterator_create(db, &ro, &it, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_iterator_create(db, NULL, NULL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_iterator_create(NULL, NULL, &it, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_iterator_free(NULL, ERR));
}

static void test_snapshots(shale_db_t *db, shale_db_t *other) {
    shale_snapshot_t *s = NULL;
    EXPECT(SHALE_INVALID_ARGUMENT, shale_snapshot_create(db, NULL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_snapshot_create(NULL, &s, ERR));
    EXPECT(SHALE_OK, shale_put(db, K("snap"), K("before"), ERR));
    EXPECT(SHALE_OK, shale_snapshot_create(db, &s, ERR));
    EXPECT(SHALE_OK, shale_put(db, K("snap"), K("after"), ERR));
    EXPECT(SHALE_OK, shale_put(db, K("snap2"), K("new"), ERR));
    CHECK(value_is(db, "snap", "after"));

    uint8_t *value = NULL;
    size_t len = 0;
    bool found = false;
    EXPECT(SHALE_OK, shale_snapshot_get(s, K("snap"), &value, &len, &found, ERR));
    CHECK(found && len == 6 && memcmp(value, "before", 6) == 0);
    shale_free(value);
    EXPECT(SHALE_OK, shale_snapshot_get(s, K("snap2"), &value, &len, &found, ERR));
    CHECK(!found);
    uint8_t buf[16];
    EXPECT(SHALE_OK, shale_snapshot_get_into(s, K("snap"), buf, sizeof buf, &len, &found, ERR));
    CHECK(found && len == 6 && memcmp(buf, "before", 6) == 0);
    EXPECT(SHALE_INVALID_ARGUMENT, shale_snapshot_get(s, NULL, 1, &value, &len, &found, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_snapshot_get(s, K("snap"), NULL, &len, &found, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_snapshot_get_into(s, K("snap"), NULL, 3, &len, &found, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_snapshot_get(NULL, K("snap"), &value, &len, &found, ERR));

    /* Iterating through the snapshot sees its state. */
    shale_read_options_t ro;
    memset(&ro, 0, sizeof ro);
    ro.snapshot = s;
    ro.prefix = (const uint8_t *)"snap";
    ro.prefix_len = 4;
    shale_iterator_t *it = NULL;
    char out[64];
    EXPECT(SHALE_OK, shale_iterator_create(db, &ro, &it, ERR));
    CHECK(strcmp(walk(it, true, out, sizeof out), "snap,") == 0);
    shale_entry_t e;
    EXPECT(SHALE_OK, shale_iterator_seek_to_first(it, &e, ERR));
    CHECK(entry_is(&e, "snap", "before"));
    EXPECT(SHALE_OK, shale_iterator_free(it, ERR));
    /* A snapshot of one database cannot read another. */
    EXPECT(SHALE_INVALID_ARGUMENT, shale_iterator_create(other, &ro, &it, ERR));

    EXPECT(SHALE_OK, shale_snapshot_free(s, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_snapshot_free(s, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_snapshot_free(NULL, ERR));
}

static void test_maintenance(shale_db_t *db) {
    char key[32], val[64];
    for (int i = 0; i < 3000; i++) {
        snprintf(key, sizeof key, "bulk%06d", i);
        snprintf(val, sizeof val, "value-%d-padding-padding-padding", i);
        EXPECT(SHALE_OK, shale_put(db, K(key), K(val), ERR));
    }
    EXPECT(SHALE_OK, shale_flush(db, ERR));
    EXPECT(SHALE_OK, shale_sync(db, ERR));
    EXPECT(SHALE_OK, shale_compact_all(db, ERR));
    CHECK(value_is(db, "bulk001234", "value-1234-padding-padding-padding"));
    for (int i = 0; i < 3000; i += 2) {
        snprintf(key, sizeof key, "bulk%06d", i);
        EXPECT(SHALE_OK, shale_delete(db, K(key), ERR));
    }
    EXPECT(SHALE_OK, shale_compact_range(db, K("bulk000000"), K("bulk001000"), ERR));
    EXPECT(SHALE_OK, shale_compact_range(db, NULL, 0, K("bulk"), ERR));
    EXPECT(SHALE_OK, shale_compact_range(db, K("bulk002000"), NULL, 0, ERR));
    EXPECT(SHALE_OK, shale_compact_range(db, NULL, 0, NULL, 0, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_compact_range(db, K("b"), K("a"), ERR)); /* start > end */
    EXPECT(SHALE_INVALID_ARGUMENT, shale_compact_range(db, NULL, 1, NULL, 0, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_compact_range(NULL, NULL, 0, NULL, 0, ERR));
    CHECK(value_is(db, "bulk000002", NULL) && value_is(db, "bulk000003", "value-3-padding-padding-padding"));

    /* Several keys read in one state. */
    const uint8_t *keys[3] = {(const uint8_t *)"bulk000001", (const uint8_t *)"bulk000002", (const uint8_t *)"carol"};
    size_t key_lens[3] = {10, 10, 5};
    uint8_t *values[3];
    size_t value_lens[3];
    bool founds[3];
    EXPECT(SHALE_OK, shale_multi_get(db, keys, key_lens, 3, values, value_lens, founds, ERR));
    CHECK(founds[0] && value_lens[0] == strlen("value-1-padding-padding-padding") && memcmp(values[0], "value-1-", 8) == 0);
    CHECK(!founds[1] && values[1] == NULL && value_lens[1] == 0);
    CHECK(founds[2] && value_lens[2] == 2 && memcmp(values[2], "30", 2) == 0);
    shale_free(values[0]);
    shale_free(values[2]);
    EXPECT(SHALE_OK, shale_multi_get(db, NULL, NULL, 0, NULL, NULL, NULL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_multi_get(db, NULL, key_lens, 3, values, value_lens, founds, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_multi_get(db, keys, key_lens, 3, NULL, value_lens, founds, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_multi_get(db, keys, key_lens, 3, values, value_lens, NULL, ERR));
    const uint8_t *bad_keys[2] = {(const uint8_t *)"carol", NULL};
    size_t bad_lens[2] = {5, 4};
    EXPECT(SHALE_INVALID_ARGUMENT, shale_multi_get(db, bad_keys, bad_lens, 2, values, value_lens, founds, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_multi_get(NULL, keys, key_lens, 3, values, value_lens, founds, ERR));

    shale_metrics_t m;
    memset(&m, 0, sizeof m);
    EXPECT(SHALE_OK, shale_metrics(db, &m, ERR));
    CHECK(m.gets > 0 && m.gets_found > 0);
    CHECK(m.flushes >= 1 && m.compactions >= 1);
    CHECK(m.bytes_written_user > 3000 * 10 && m.bytes_written_tables > 0);
    CHECK(m.block_cache_capacity == 4 << 20);
    EXPECT(SHALE_INVALID_ARGUMENT, shale_metrics(db, NULL, ERR));

    char *text = NULL;
    EXPECT(SHALE_OK, shale_stats(db, &text, ERR));
    CHECK(text != NULL && strstr(text, "L6") != NULL && strstr(text, "gets") != NULL);
    shale_free(text);
    EXPECT(SHALE_INVALID_ARGUMENT, shale_stats(db, NULL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_flush(NULL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_sync(NULL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_compact_all(NULL, ERR));
}

/* shale_multi_get_each over the bulk keys of test_maintenance (odd ones
 * present, even ones deleted). */
struct each_state {
    shale_db_t *db;
    int calls;
    int stop_after; /* 0: never */
    int nested;     /* read another key inside the callback */
    int close_inside;
    int seen[3000];
    int wrong;
};

static bool each_answer(void *ctx, size_t index, const uint8_t *value, size_t value_len, bool found) {
    struct each_state *st = ctx;
    st->calls++;
    if (index >= 3000) {
        st->wrong++;
        return false;
    }
    st->seen[index]++;
    char want[64];
    snprintf(want, sizeof want, "value-%zu-padding-padding-padding", index);
    bool should = index % 2 == 1;
    if (found != should) st->wrong++;
    if (found && (value_len != strlen(want) || memcmp(value, want, value_len) != 0)) st->wrong++;
    if (!found && (value != NULL || value_len != 0)) st->wrong++;
    if (st->nested) {
        /* A read of the same database from inside the callback. */
        if (!value_is(st->db, "bulk000003", "value-3-padding-padding-padding")) st->wrong++;
    }
    if (st->close_inside) {
        EXPECT_REFUSED("inside a callback", shale_close(st->db, ERR));
        EXPECT_REFUSED("inside a callback", shale_db_free(st->db, ERR));
    }
    return st->stop_after == 0 || st->calls < st->stop_after;
}

static void test_multi_get_each(shale_db_t *db) {
    static const uint8_t *keys[3000];
    static size_t key_lens[3000];
    static char names[3000][16];
    for (int i = 0; i < 3000; i++) {
        snprintf(names[i], sizeof names[i], "bulk%06d", i);
        keys[i] = (const uint8_t *)names[i];
        key_lens[i] = strlen(names[i]);
    }
    static struct each_state st;
    memset(&st, 0, sizeof st);
    st.db = db;
    EXPECT(SHALE_OK, shale_multi_get_each(db, keys, key_lens, 3000, 16, each_answer, &st, ERR));
    CHECK(st.calls == 3000 && st.wrong == 0);
    int once = 1;
    for (int i = 0; i < 3000; i++) once = once && st.seen[i] == 1;
    CHECK(once);

    /* false from the callback ends the call, with SHALE_OK. */
    memset(&st, 0, sizeof st);
    st.db = db;
    st.stop_after = 5;
    EXPECT(SHALE_OK, shale_multi_get_each(db, keys, key_lens, 3000, 4, each_answer, &st, ERR));
    CHECK(st.calls == 5 && st.wrong == 0);

    /* Reads of the database inside the callback; a close there is refused
     * and the database stays open. */
    memset(&st, 0, sizeof st);
    st.db = db;
    st.nested = 1;
    st.close_inside = 1;
    EXPECT(SHALE_OK, shale_multi_get_each(db, keys, key_lens, 20, 2, each_answer, &st, ERR));
    CHECK(st.calls == 20 && st.wrong == 0);
    CHECK(value_is(db, "bulk000001", "value-1-padding-padding-padding"));

    memset(&st, 0, sizeof st);
    st.db = db;
    EXPECT(SHALE_OK, shale_multi_get_each(db, NULL, NULL, 0, 1, each_answer, &st, ERR));
    CHECK(st.calls == 0);
    EXPECT_REFUSED("reads_in_flight", shale_multi_get_each(db, keys, key_lens, 3, 0, each_answer, &st, ERR));
    EXPECT_REFUSED("callback", shale_multi_get_each(db, keys, key_lens, 3, 1, NULL, &st, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_multi_get_each(db, NULL, key_lens, 3, 1, each_answer, &st, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_multi_get_each(NULL, keys, key_lens, 3, 1, each_answer, &st, ERR));
    CHECK(st.calls == 0);
}

/* Range deletions, on a database of their own (they delete from the smallest
 * key up): directly and in batches, their bounds, what snapshots and iterators
 * see, and what survives a flush, a compaction and a reopen. */
static void test_range_deletions(const char *dir) {
    char path[4096], out[256];
    snprintf(path, sizeof path, "%s/ranges", dir);
    shale_options_t *o = NULL;
    shale_db_t *db = NULL;
    EXPECT(SHALE_OK, shale_options_create(&o, ERR));
    EXPECT(SHALE_OK, shale_options_set_sync(o, true, ERR)); /* the synced path */
    EXPECT(SHALE_OK, shale_open(path, o, &db, ERR));
    EXPECT(SHALE_OK, shale_options_free(o, ERR));
    const char *keys[] = {"a", "b", "b1", "c", "d", "e"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) EXPECT(SHALE_OK, shale_put(db, K(keys[i]), K("v"), ERR));
    EXPECT(SHALE_OK, shale_put(db, NULL, 0, K("empty"), ERR));

    /* [start, end): start deleted, end kept. */
    shale_snapshot_t *s = NULL;
    EXPECT(SHALE_OK, shale_snapshot_create(db, &s, ERR));
    EXPECT(SHALE_OK, shale_delete_range(db, K("b"), K("d"), ERR));
    CHECK(value_is(db, "a", "v") && value_is(db, "b", NULL) && value_is(db, "b1", NULL));
    CHECK(value_is(db, "c", NULL) && value_is(db, "d", "v") && value_is(db, "e", "v"));
    shale_iterator_t *it = NULL;
    EXPECT(SHALE_OK, shale_iterator_create(db, NULL, &it, ERR));
    CHECK(strcmp(walk(it, true, out, sizeof out), ",a,d,e,") == 0);
    CHECK(strcmp(walk(it, false, out, sizeof out), "e,d,a,,") == 0);
    EXPECT(SHALE_OK, shale_iterator_free(it, ERR));
    /* A snapshot taken before still sees the keys. */
    uint8_t *value = NULL;
    size_t len = 0;
    bool found = false;
    EXPECT(SHALE_OK, shale_snapshot_get(s, K("c"), &value, &len, &found, ERR));
    CHECK(found && len == 1 && value[0] == 'v');
    if (found) shale_free(value);
    EXPECT(SHALE_OK, shale_snapshot_free(s, ERR));
    /* A key written after the deletion is not affected by it. */
    EXPECT(SHALE_OK, shale_put(db, K("c"), K("again"), ERR));
    CHECK(value_is(db, "c", "again"));

    /* An empty range does nothing; a reversed one is refused and deletes
     * nothing; a NULL with a length is refused. */
    EXPECT(SHALE_OK, shale_delete_range(db, K("c"), K("c"), ERR));
    EXPECT(SHALE_OK, shale_delete_range(db, NULL, 0, NULL, 0, ERR));
    CHECK(value_is(db, "c", "again") && value_is(db, "", "empty"));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_delete_range(db, K("e"), K("a"), ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_delete_range(db, K("a"), NULL, 0, ERR)); /* end "" < start */
    CHECK(value_is(db, "a", "v") && value_is(db, "c", "again") && value_is(db, "e", "v"));
    char *msg = NULL;
    CHECK(shale_delete_range(db, K("e"), K("a"), &msg) == SHALE_INVALID_ARGUMENT);
    CHECK(msg != NULL && strstr(msg, "[e, a)") != NULL && strstr(msg, "start above its end") != NULL);
    shale_free(msg);
    EXPECT(SHALE_INVALID_ARGUMENT, shale_delete_range(db, NULL, 1, K("z"), ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_delete_range(db, K("a"), NULL, 2, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_delete_range(NULL, K("a"), K("z"), ERR));
    shale_batch_t *b = NULL;
    EXPECT(SHALE_OK, shale_batch_create(&b, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_delete_range((shale_db_t *)b, K("a"), K("z"), ERR));
    /* errmsg is optional. */
    CHECK(shale_delete_range(db, K("z"), K("a"), NULL) == SHALE_INVALID_ARGUMENT);

    /* In a batch: applied in order with the other operations, so a put
     * before the range deletion is deleted by it and a put after it is kept. */
    size_t n = 0;
    EXPECT(SHALE_OK, shale_batch_put(b, K("a1"), K("before"), ERR));
    EXPECT(SHALE_OK, shale_batch_delete_range(b, K("a"), K("d"), ERR));
    EXPECT(SHALE_OK, shale_batch_put(b, K("a2"), K("after"), ERR));
    EXPECT(SHALE_OK, shale_batch_delete(b, K("e"), ERR));
    EXPECT(SHALE_OK, shale_batch_count(b, &n, ERR));
    CHECK(n == 4);
    /* An empty range adds nothing; a reversed one or a NULL with a length is
     * refused and adds nothing, and the batch stays writable. */
    EXPECT(SHALE_OK, shale_batch_delete_range(b, K("b"), K("b"), ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_batch_delete_range(b, K("d"), K("a"), ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_batch_delete_range(b, NULL, 3, K("a"), ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_batch_delete_range(b, K("a"), NULL, 3, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_batch_delete_range(NULL, K("a"), K("b"), ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_batch_delete_range((shale_batch_t *)db, K("a"), K("b"), ERR));
    EXPECT(SHALE_OK, shale_batch_count(b, &n, ERR));
    CHECK(n == 4);
    CHECK(value_is(db, "a", "v")); /* nothing before the write */
    EXPECT(SHALE_OK, shale_write(db, b, false, ERR));
    CHECK(value_is(db, "a", NULL) && value_is(db, "a1", NULL) && value_is(db, "a2", "after"));
    CHECK(value_is(db, "c", NULL) && value_is(db, "d", "v") && value_is(db, "e", NULL));
    CHECK(value_is(db, "", "empty"));
    /* From the empty key, the smallest, up. */
    EXPECT(SHALE_OK, shale_batch_clear(b, ERR));
    EXPECT(SHALE_OK, shale_batch_delete_range(b, NULL, 0, K("a3"), ERR));
    EXPECT(SHALE_OK, shale_write(db, b, false, ERR));
    CHECK(value_is(db, "", NULL) && value_is(db, "a2", NULL) && value_is(db, "d", "v"));

    /* Through a flush, a compaction and a reopen. */
    char key[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof key, "n%04d", i);
        EXPECT(SHALE_OK, shale_put(db, K(key), K("value"), ERR));
    }
    EXPECT(SHALE_OK, shale_flush(db, ERR));
    EXPECT(SHALE_OK, shale_delete_range(db, K("n0100"), K("n0900"), ERR));
    CHECK(value_is(db, "n0099", "value") && value_is(db, "n0100", NULL) && value_is(db, "n0899", NULL));
    CHECK(value_is(db, "n0900", "value"));
    EXPECT(SHALE_OK, shale_close(db, ERR));
    EXPECT(SHALE_OK, shale_db_free(db, ERR));
    db = open_db(path, false);
    CHECK(value_is(db, "n0500", NULL) && value_is(db, "n0900", "value") && value_is(db, "d", "v"));
    EXPECT(SHALE_OK, shale_compact_all(db, ERR));
    CHECK(value_is(db, "n0099", "value") && value_is(db, "n0100", NULL) && value_is(db, "n0900", "value"));
    {
        /* The 200 keys left of the thousand, by an iterator. */
        shale_read_options_t opts;
        memset(&opts, 0, sizeof opts);
        opts.prefix = (const uint8_t *)"n";
        opts.prefix_len = 1;
        EXPECT(SHALE_OK, shale_iterator_create(db, &opts, &it, ERR));
        shale_entry_t e;
        int count = 0;
        for (shale_code_t c = shale_iterator_seek_to_first(it, &e, NULL); c == SHALE_OK && e.valid;
             c = shale_iterator_next(it, &e, NULL))
            count++;
        CHECK(count == 200);
        EXPECT(SHALE_OK, shale_iterator_free(it, ERR));
    }

    /* After close: the database refuses, the batch (of no database) does not. */
    EXPECT(SHALE_OK, shale_close(db, ERR));
    EXPECT(SHALE_CLOSED, shale_delete_range(db, K("a"), K("b"), ERR));
    EXPECT(SHALE_OK, shale_batch_delete_range(b, K("x"), K("y"), ERR));
    EXPECT(SHALE_CLOSED, shale_write(db, b, false, ERR));
    EXPECT(SHALE_OK, shale_db_free(db, ERR));

    /* Read-only: refused, and nothing deleted. */
    shale_db_t *ro = open_db(path, true);
    EXPECT(SHALE_READ_ONLY, shale_delete_range(ro, K("d"), K("e"), ERR));
    EXPECT(SHALE_READ_ONLY, shale_write(ro, b, false, ERR));
    CHECK(value_is(ro, "d", "v"));
    EXPECT(SHALE_OK, shale_db_free(ro, ERR));
    EXPECT(SHALE_OK, shale_batch_free(b, ERR));
}

/* Pinned gets (shale_get_pinned, shale_snapshot_get_pinned, shale_pinned_data,
 * shale_pinned_free) and the copying gets on values that live in tables, on a
 * database of their own: values from the memtable and from tables (small,
 * empty, larger than a block), missing keys, their error paths, and pinned
 * values that outlive their snapshot and their database. */
static void test_pinned(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/pinned", dir);
    shale_db_t *db = open_db(path, false);
    static char big[10000];
    for (size_t i = 0; i + 1 < sizeof big; i++) big[i] = (char)('a' + i % 26);
    big[sizeof big - 1] = 0;
    EXPECT(SHALE_OK, shale_put(db, K("k"), K("in-the-table"), ERR));
    EXPECT(SHALE_OK, shale_put(db, K("empty"), NULL, 0, ERR));
    EXPECT(SHALE_OK, shale_put(db, K("big"), K(big), ERR));
    EXPECT(SHALE_OK, shale_put(db, NULL, 0, K("the empty key"), ERR));

    /* From the memtable. */
    shale_pinned_t *p = (shale_pinned_t *)0x1;
    bool found = false;
    EXPECT(SHALE_OK, shale_get_pinned(db, K("k"), &p, &found, ERR));
    CHECK(found && pinned_is(p, "in-the-table"));
    shale_pinned_t *mem = p;

    /* From a table: flushed first; the copying gets read the same bytes. */
    shale_metrics_t m0, m1;
    EXPECT(SHALE_OK, shale_metrics(db, &m0, ERR));
    EXPECT(SHALE_OK, shale_flush(db, ERR));
    EXPECT(SHALE_OK, shale_metrics(db, &m1, ERR));
    CHECK(m1.flushes == m0.flushes + 1);
    shale_pinned_t *table = NULL, *empty = NULL, *large = NULL, *empty_key = NULL;
    EXPECT(SHALE_OK, shale_get_pinned(db, K("k"), &table, &found, ERR));
    CHECK(found && pinned_is(table, "in-the-table"));
    EXPECT(SHALE_OK, shale_get_pinned(db, K("empty"), &empty, &found, ERR));
    CHECK(found && empty != NULL && pinned_is(empty, ""));
    size_t len = 99;
    CHECK(shale_pinned_data(empty, &len) != NULL && len == 0); /* never NULL for a live handle */
    EXPECT(SHALE_OK, shale_get_pinned(db, K("big"), &large, &found, ERR));
    CHECK(found && pinned_is(large, big));
    EXPECT(SHALE_OK, shale_get_pinned(db, NULL, 0, &empty_key, &found, ERR));
    CHECK(found && pinned_is(empty_key, "the empty key"));
    CHECK(shale_pinned_data(table, NULL) != NULL); /* len is optional */
    EXPECT(SHALE_OK, shale_metrics(db, &m0, ERR));
    CHECK(m0.gets_memtable_hits == m1.gets_memtable_hits); /* all four from the table */
    CHECK(value_is(db, "k", "in-the-table") && value_is(db, "empty", "") && value_is(db, "big", big));
    uint8_t buf[16];
    EXPECT(SHALE_OK, shale_get_into(db, K("k"), buf, sizeof buf, &len, &found, ERR));
    CHECK(found && len == 12 && memcmp(buf, "in-the-table", 12) == 0);
    EXPECT(SHALE_OK, shale_get_into(db, K("big"), buf, sizeof buf, &len, &found, ERR));
    CHECK(found && len == sizeof big - 1 && memcmp(buf, big, sizeof buf) == 0); /* short buffer */
    uint8_t *whole = malloc(len);
    size_t whole_len = 0;
    EXPECT(SHALE_OK, shale_get_into(db, K("big"), whole, len, &whole_len, &found, ERR));
    CHECK(found && whole_len == len && memcmp(whole, big, len) == 0);
    free(whole);
    EXPECT(SHALE_OK, shale_get_into(db, K("empty"), NULL, 0, &len, &found, ERR));
    CHECK(found && len == 0);

    /* Missing: found false and out NULL, in a table's range or not. */
    p = (shale_pinned_t *)0x1;
    found = true;
    EXPECT(SHALE_OK, shale_get_pinned(db, K("j"), &p, &found, ERR));
    CHECK(!found && p == NULL);
    p = (shale_pinned_t *)0x1;
    found = true;
    EXPECT(SHALE_OK, shale_get_pinned(db, K("zzz"), &p, &found, ERR));
    CHECK(!found && p == NULL);
    /* Deleted after the flush: missing (the tombstone in the memtable). */
    EXPECT(SHALE_OK, shale_put(db, K("gone"), K("x"), ERR));
    EXPECT(SHALE_OK, shale_flush(db, ERR));
    EXPECT(SHALE_OK, shale_delete(db, K("gone"), ERR));
    EXPECT(SHALE_OK, shale_get_pinned(db, K("gone"), &p, &found, ERR));
    CHECK(!found && p == NULL);

    /* Bad arguments: refused, out untouched. */
    p = (shale_pinned_t *)0x1;
    EXPECT(SHALE_INVALID_ARGUMENT, shale_get_pinned(db, NULL, 1, &p, &found, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_get_pinned(db, K("k"), NULL, &found, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_get_pinned(db, K("k"), &p, NULL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_get_pinned(NULL, K("k"), &p, &found, ERR));
    shale_batch_t *b = NULL;
    EXPECT(SHALE_OK, shale_batch_create(&b, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_get_pinned((shale_db_t *)b, K("k"), &p, &found, ERR));
    CHECK(p == (shale_pinned_t *)0x1);
    /* shale_pinned_data has no code: NULL (and length 0) for NULL or a
     * handle of another kind. */
    len = 7;
    CHECK(shale_pinned_data(NULL, &len) == NULL && len == 0);
    len = 7;
    CHECK(shale_pinned_data((const shale_pinned_t *)b, &len) == NULL && len == 0);
    CHECK(shale_pinned_data((const shale_pinned_t *)db, NULL) == NULL);
    EXPECT(SHALE_INVALID_ARGUMENT, shale_pinned_free(NULL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_pinned_free((shale_pinned_t *)b, ERR));
    EXPECT(SHALE_OK, shale_batch_free(b, ERR));

    /* Through a snapshot: the version it sees, from a table, after the newer
     * version was flushed too. */
    shale_snapshot_t *s = NULL;
    EXPECT(SHALE_OK, shale_snapshot_create(db, &s, ERR));
    EXPECT(SHALE_OK, shale_put(db, K("k"), K("newer"), ERR));
    EXPECT(SHALE_OK, shale_put(db, K("later"), K("x"), ERR));
    EXPECT(SHALE_OK, shale_flush(db, ERR));
    shale_pinned_t *snap_old = NULL, *now = NULL;
    EXPECT(SHALE_OK, shale_snapshot_get_pinned(s, K("k"), &snap_old, &found, ERR));
    CHECK(found && pinned_is(snap_old, "in-the-table"));
    EXPECT(SHALE_OK, shale_get_pinned(db, K("k"), &now, &found, ERR));
    CHECK(found && pinned_is(now, "newer"));
    p = (shale_pinned_t *)0x1;
    EXPECT(SHALE_OK, shale_snapshot_get_pinned(s, K("later"), &p, &found, ERR));
    CHECK(!found && p == NULL);
    uint8_t *value = NULL;
    EXPECT(SHALE_OK, shale_snapshot_get(s, K("k"), &value, &len, &found, ERR));
    CHECK(found && len == 12 && memcmp(value, "in-the-table", 12) == 0);
    shale_free(value);
    EXPECT(SHALE_OK, shale_snapshot_get_into(s, K("big"), buf, sizeof buf, &len, &found, ERR));
    CHECK(found && len == sizeof big - 1 && memcmp(buf, big, sizeof buf) == 0);
    EXPECT(SHALE_INVALID_ARGUMENT, shale_snapshot_get_pinned(s, NULL, 2, &p, &found, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_snapshot_get_pinned(s, K("k"), NULL, &found, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_snapshot_get_pinned(s, K("k"), &p, NULL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_snapshot_get_pinned(NULL, K("k"), &p, &found, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_snapshot_get_pinned((shale_snapshot_t *)db, K("k"), &p, &found, ERR));
    /* A pinned value outlives its snapshot. */
    EXPECT(SHALE_OK, shale_snapshot_free(s, ERR));
    CHECK(pinned_is(snap_old, "in-the-table"));
    EXPECT(SHALE_OK, shale_pinned_free(snap_old, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_pinned_free(snap_old, ERR)); /* freed twice */

    /* A compaction rewrites the tables: pinned blocks are not disturbed. */
    EXPECT(SHALE_OK, shale_compact_all(db, ERR));
    CHECK(pinned_is(table, "in-the-table") && pinned_is(large, big));

    /* Close: the pinned values stay valid (also after the handle is freed and
     * the database reopened), reads refuse with SHALE_CLOSED. */
    EXPECT(SHALE_OK, shale_snapshot_create(db, &s, ERR));
    EXPECT(SHALE_OK, shale_close(db, ERR));
    p = (shale_pinned_t *)0x1;
    EXPECT(SHALE_CLOSED, shale_get_pinned(db, K("k"), &p, &found, ERR));
    EXPECT(SHALE_CLOSED, shale_snapshot_get_pinned(s, K("k"), &p, &found, ERR));
    CHECK(p == (shale_pinned_t *)0x1);
    CHECK(pinned_is(mem, "in-the-table") && pinned_is(table, "in-the-table") && pinned_is(now, "newer"));
    CHECK(pinned_is(empty, "") && pinned_is(large, big) && pinned_is(empty_key, "the empty key"));
    EXPECT(SHALE_OK, shale_snapshot_free(s, ERR));
    EXPECT(SHALE_OK, shale_db_free(db, ERR));
    db = open_db(path, false);
    EXPECT(SHALE_OK, shale_put(db, K("k"), K("after reopen"), ERR));
    EXPECT(SHALE_OK, shale_flush(db, ERR));
    EXPECT(SHALE_OK, shale_db_free(db, ERR));
    CHECK(pinned_is(table, "in-the-table") && pinned_is(now, "newer") && pinned_is(large, big));
    shale_pinned_t *all[] = {mem, table, empty, large, empty_key, now};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) EXPECT(SHALE_OK, shale_pinned_free(all[i], ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_pinned_free(table, ERR));
}

/* shale_sync syncs the write-ahead log and writes no table; refused on a
 * read-only database and after close. */
static void test_sync(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/sync", dir);
    shale_db_t *db = open_db(path, false);
    shale_metrics_t before, after;
    EXPECT(SHALE_OK, shale_put(db, K("a"), K("1"), ERR));
    EXPECT(SHALE_OK, shale_metrics(db, &before, ERR));
    EXPECT(SHALE_OK, shale_sync(db, ERR));
    EXPECT(SHALE_OK, shale_sync(db, ERR)); /* nothing new: still fine */
    EXPECT(SHALE_OK, shale_metrics(db, &after, ERR));
    CHECK(after.flushes == before.flushes && after.bytes_written_tables == before.bytes_written_tables);
    CHECK(after.wal_syncs == before.wal_syncs + 2);
    CHECK(value_is(db, "a", "1"));
    EXPECT(SHALE_OK, shale_close(db, ERR));
    EXPECT(SHALE_CLOSED, shale_sync(db, ERR));
    EXPECT(SHALE_OK, shale_db_free(db, ERR));
    shale_db_t *ro = open_db(path, true);
    EXPECT(SHALE_READ_ONLY, shale_sync(ro, ERR));
    CHECK(value_is(ro, "a", "1"));
    EXPECT(SHALE_OK, shale_db_free(ro, ERR));
}

struct worker {
    shale_db_t *db;
    int id;
    int errors;
};

static void *work(void *arg) {
    struct worker *w = arg;
    char key[32];
    for (int i = 0; i < 500; i++) {
        snprintf(key, sizeof key, "t%d-%04d", w->id, i);
        if (shale_put(w->db, K(key), K(key), NULL) != SHALE_OK) w->errors++;
        if (!value_is(w->db, key, key)) w->errors++;
        shale_pinned_t *p = NULL;
        bool found = false;
        if (shale_get_pinned(w->db, K(key), &p, &found, NULL) != SHALE_OK || !found || !pinned_is(p, key))
            w->errors++;
        if (p != NULL && shale_pinned_free(p, NULL) != SHALE_OK) w->errors++;
        /* A value every thread reads from a table at once. */
        if (shale_get_pinned(w->db, K("bulk001235"), &p, &found, NULL) != SHALE_OK || !found ||
            !pinned_is(p, "value-1235-padding-padding-padding"))
            w->errors++;
        if (p != NULL && shale_pinned_free(p, NULL) != SHALE_OK) w->errors++;
    }
    return NULL;
}

static void test_threads(shale_db_t *db) {
    pthread_t threads[4];
    struct worker workers[4];
    for (int i = 0; i < 4; i++) {
        workers[i] = (struct worker){db, i, 0};
        CHECK(pthread_create(&threads[i], NULL, work, &workers[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        CHECK(workers[i].errors == 0);
    }
}

/* Closing invalidates every dependent handle: calls on them fail with
 * SHALE_CLOSED, and they can still be freed. */
static void test_use_after_close(const char *path) {
    shale_db_t *db = open_db(path, false);
    shale_snapshot_t *s = NULL;
    shale_iterator_t *it = NULL;
    shale_batch_t *b = NULL;
    shale_entry_t e;
    EXPECT(SHALE_OK, shale_snapshot_create(db, &s, ERR));
    EXPECT(SHALE_OK, shale_iterator_create(db, NULL, &it, ERR));
    EXPECT(SHALE_OK, shale_iterator_seek_to_first(it, &e, ERR));
    CHECK(e.valid);
    EXPECT(SHALE_OK, shale_batch_create(&b, ERR));
    EXPECT(SHALE_OK, shale_batch_put(b, K("x"), K("y"), ERR));

    EXPECT(SHALE_OK, shale_close(db, ERR));
    EXPECT(SHALE_CLOSED, shale_close(db, ERR));

    uint8_t *value = NULL;
    size_t len = 0;
    bool found = false;
    uint8_t buf[4];
    shale_metrics_t m;
    char *text = NULL;
    shale_snapshot_t *s2 = NULL;
    shale_iterator_t *it2 = NULL;
    const uint8_t *p = NULL;
    bool valid = false;
    EXPECT(SHALE_CLOSED, shale_put(db, K("k"), K("v"), ERR));
    EXPECT(SHALE_CLOSED, shale_delete(db, K("k"), ERR));
    EXPECT(SHALE_CLOSED, shale_get(db, K("alice"), &value, &len, &found, ERR));
    EXPECT(SHALE_CLOSED, shale_get_into(db, K("alice"), buf, sizeof buf, &len, &found, ERR));
    shale_pinned_t *pinned = NULL;
    EXPECT(SHALE_CLOSED, shale_get_pinned(db, K("alice"), &pinned, &found, ERR));
    EXPECT(SHALE_CLOSED, shale_write(db, b, false, ERR));
    EXPECT(SHALE_CLOSED, shale_flush(db, ERR));
    EXPECT(SHALE_CLOSED, shale_sync(db, ERR));
    EXPECT(SHALE_CLOSED, shale_compact_all(db, ERR));
    EXPECT(SHALE_CLOSED, shale_compact_range(db, NULL, 0, NULL, 0, ERR));
    const uint8_t *one_key[1] = {(const uint8_t *)"alice"};
    size_t one_len[1] = {5};
    uint8_t *one_value[1];
    bool one_found[1];
    EXPECT(SHALE_CLOSED, shale_multi_get(db, one_key, one_len, 1, one_value, &len, one_found, ERR));
    EXPECT(SHALE_CLOSED, shale_multi_get(db, NULL, NULL, 0, NULL, NULL, NULL, ERR));
    EXPECT(SHALE_CLOSED, shale_multi_get_each(db, one_key, one_len, 1, 4, each_answer, NULL, ERR));
    EXPECT(SHALE_CLOSED, shale_metrics(db, &m, ERR));
    EXPECT(SHALE_CLOSED, shale_stats(db, &text, ERR));
    EXPECT(SHALE_CLOSED, shale_snapshot_create(db, &s2, ERR));
    EXPECT(SHALE_CLOSED, shale_iterator_create(db, NULL, &it2, ERR));
    EXPECT(SHALE_CLOSED, shale_snapshot_get(s, K("alice"), &value, &len, &found, ERR));
    EXPECT(SHALE_CLOSED, shale_snapshot_get_into(s, K("alice"), buf, sizeof buf, &len, &found, ERR));
    EXPECT(SHALE_CLOSED, shale_snapshot_get_pinned(s, K("alice"), &pinned, &found, ERR));
    CHECK(pinned == NULL);
    EXPECT(SHALE_CLOSED, shale_iterator_next(it, &e, ERR));
    EXPECT(SHALE_CLOSED, shale_iterator_prev(it, &e, ERR));
    EXPECT(SHALE_CLOSED, shale_iterator_seek_to_first(it, &e, ERR));
    EXPECT(SHALE_CLOSED, shale_iterator_seek_to_last(it, &e, ERR));
    EXPECT(SHALE_CLOSED, shale_iterator_seek(it, K("a"), &e, ERR));
    EXPECT(SHALE_CLOSED, shale_iterator_seek_for_prev(it, K("a"), &e, ERR));
    EXPECT(SHALE_CLOSED, shale_iterator_valid(it, &valid, ERR));
    EXPECT(SHALE_CLOSED, shale_iterator_entry(it, &e, ERR));
    EXPECT(SHALE_CLOSED, shale_iterator_key(it, &p, &len, ERR));
    EXPECT(SHALE_CLOSED, shale_iterator_value(it, &p, &len, ERR));
    EXPECT(SHALE_CLOSED, shale_iterator_status(it, ERR));
    /* The batch belongs to no database: still usable. */
    EXPECT(SHALE_OK, shale_batch_put(b, K("x2"), K("y2"), ERR));

    /* The released handles hold nothing: the database opens again at once. */
    shale_db_t *again = open_db(path, false);
    CHECK(again != NULL && value_is(again, "alice", NULL) && value_is(again, "carol", "30"));
    EXPECT(SHALE_OK, shale_write(again, b, false, ERR));
    CHECK(value_is(again, "x2", "y2"));
    EXPECT(SHALE_OK, shale_db_free(again, ERR)); /* closes it */

    EXPECT(SHALE_OK, shale_iterator_free(it, ERR));
    EXPECT(SHALE_OK, shale_snapshot_free(s, ERR));
    EXPECT(SHALE_OK, shale_batch_free(b, ERR));
    EXPECT(SHALE_OK, shale_db_free(db, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_db_free(db, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_db_free(NULL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_close(NULL, ERR));
}

static void test_read_only(const char *path) {
    shale_db_t *ro = open_db(path, true);
    CHECK(ro != NULL);
    /* Two read-only handles may share it; a read-write one may not. */
    shale_db_t *ro2 = open_db(path, true);
    shale_db_t *rw = NULL;
    EXPECT(SHALE_LOCKED, shale_open(path, NULL, &rw, ERR));
    CHECK(rw == NULL);
    CHECK(value_is(ro, "carol", "30") && value_is(ro2, "dave", "40"));
    shale_batch_t *b = NULL;
    EXPECT(SHALE_OK, shale_batch_create(&b, ERR));
    EXPECT(SHALE_OK, shale_batch_put(b, K("k"), K("v"), ERR));
    EXPECT(SHALE_READ_ONLY, shale_put(ro, K("k"), K("v"), ERR));
    EXPECT(SHALE_READ_ONLY, shale_delete(ro, K("k"), ERR));
    EXPECT(SHALE_READ_ONLY, shale_write(ro, b, false, ERR));
    EXPECT(SHALE_READ_ONLY, shale_flush(ro, ERR));
    EXPECT(SHALE_READ_ONLY, shale_compact_all(ro, ERR));
    EXPECT(SHALE_READ_ONLY, shale_compact_range(ro, NULL, 0, NULL, 0, ERR));
    EXPECT(SHALE_OK, shale_batch_free(b, ERR));
    EXPECT(SHALE_OK, shale_close(ro2, ERR));
    EXPECT(SHALE_OK, shale_db_free(ro2, ERR));
    EXPECT(SHALE_OK, shale_db_free(ro, ERR));
}

static void test_open_errors(const char *dir) {
    shale_db_t *db = NULL;
    shale_options_t *o = NULL;
    char path[4096];
    EXPECT(SHALE_INVALID_ARGUMENT, shale_open(NULL, NULL, &db, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_open(dir, NULL, NULL, ERR));
    EXPECT(SHALE_INVALID_ARGUMENT, shale_open_read_only(NULL, NULL, &db, ERR));
    snprintf(path, sizeof path, "%s/missing", dir);
    EXPECT(SHALE_OK, shale_options_create(&o, ERR));
    EXPECT(SHALE_OK, shale_options_set_create_if_missing(o, false, ERR));
    EXPECT(SHALE_NOT_A_DATABASE, shale_open(path, o, &db, ERR));
    EXPECT(SHALE_OK, shale_options_set_create_if_missing(o, true, ERR));
    EXPECT(SHALE_OK, shale_options_set_error_if_exists(o, true, ERR));
    snprintf(path, sizeof path, "%s/db", dir);
    CHECK(shale_open(path, o, &db, NULL) != SHALE_OK); /* it exists */
    EXPECT(SHALE_OK, shale_options_free(o, ERR));
    /* A directory holding other files is not a database. */
    snprintf(path, sizeof path, "%s/foreign", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/foreign/notes.txt", dir);
    FILE *f = fopen(path, "w");
    if (f) { fputs("not shale", f); fclose(f); }
    snprintf(path, sizeof path, "%s/foreign", dir);
    EXPECT(SHALE_NOT_A_DATABASE, shale_open(path, NULL, &db, ERR));
}

int main(void) {
    char dir[] = "/tmp/shale-capi-test-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    char path[4096], other_path[4096];
    snprintf(path, sizeof path, "%s/db", dir);
    snprintf(other_path, sizeof other_path, "%s/other", dir);

    test_codes();
    test_options();
    test_engine_options(dir);
    shale_db_t *db = open_db(path, false);
    shale_db_t *other = open_db(other_path, false);
    /* A second handle on an open database is refused. */
    shale_db_t *twice = NULL;
    EXPECT(SHALE_LOCKED, shale_open(path, NULL, &twice, ERR));
    EXPECT(SHALE_LOCKED, shale_open_read_only(path, NULL, &twice, ERR));
    test_reads_and_writes(db);
    test_batches(db);
    test_iterators(db);
    test_snapshots(db, other);
    test_maintenance(db);
    test_multi_get_each(db);
    test_threads(db);
    EXPECT(SHALE_OK, shale_close(db, ERR));
    EXPECT(SHALE_OK, shale_db_free(db, ERR));
    EXPECT(SHALE_OK, shale_db_free(other, ERR));
    test_use_after_close(path);
    test_read_only(path);
    test_open_errors(dir);
    test_range_deletions(dir);
    test_pinned(dir);
    test_sync(dir);

    remove_tree(dir);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures == 0 ? 0 : 1;
}
