/*
 * shale.h: the C API of shale, an embedded LSM key-value engine.
 *
 * Generated from crates/shale-capi by cbindgen (crates/shale-capi/tests/header.rs);
 * do not edit. The contract (error codes, ownership, threading) is in
 * docs/capi.md and in the comments below.
 *
 * Conventions of every function but shale_free, shale_code_name and
 * shale_pinned_data (which return no code):
 *  - it returns a shale_code_t: SHALE_OK or the failure;
 *  - its last parameter, errmsg, is NULL or points to a char *: on entry it is
 *    set to NULL, and on failure to a NUL-terminated message (when memory
 *    allows), which the caller frees with shale_free;
 *  - a byte string is a pointer and a length: NULL with length 0 is the empty
 *    string, NULL with a nonzero length is SHALE_INVALID_ARGUMENT;
 *  - a NULL handle or a NULL out-parameter is SHALE_INVALID_ARGUMENT;
 *  - no panic crosses it: a bug in shale is SHALE_INTERNAL.
 * Handles are opaque and stay valid until freed by their shale_*_free function;
 * freeing one twice is SHALE_INVALID_ARGUMENT (as long as its address has not
 * been reused by a new handle), and using one after it was freed is undefined
 * behaviour. Closing a database (shale_close) is separate from freeing it.
 */

#ifndef SHALE_H
#define SHALE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// No filters (every Get of a missing key reads the tables that could hold it).
#define SHALE_FILTER_NONE 0

// Blocked Bloom filters.
#define SHALE_FILTER_BLOOM 1

// Binary fuse filters (the default, 9 bits per key).
#define SHALE_FILTER_BINARY_FUSE 2

// Filters on every level but the last (the default).
#define SHALE_FILTER_LEVELS_ALL_BUT_LAST 0

// Filters on every level.
#define SHALE_FILTER_LEVELS_ALL 1

// Every table's metadata (indexes and filters) goes through the block cache
// (the default).
#define SHALE_TABLE_METADATA_NONE 0

// The top-level index and the index partitions of every table, at every
// level, are held with its open table reader, outside the block cache; the
// filters go through the cache.
#define SHALE_TABLE_METADATA_INDEX 1

// Every kind of metadata (top-level index, index partitions, top-level
// filter, filter partitions) is held with the table readers at L0 to L5;
// the last level's goes through the block cache.
#define SHALE_TABLE_METADATA_ALL_BUT_LAST 2

// Every kind of metadata is held with the table readers at every level.
#define SHALE_TABLE_METADATA_ALL 3

// The result of every function (but `shale_free`, `shale_code_name` and
// `shale_pinned_data`).
//
// A missing key is not an error: the get functions return `SHALE_OK` and set
// their `found` out-parameter to false.
enum shale_code_t
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : int32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  // Success.
  SHALE_OK = 0,
  // A NULL pointer where one is required, a NULL pointer with a nonzero
  // length, a handle of the wrong kind, a handle freed twice, a range whose
  // start is after its end, a bad option value, or a
  // snapshot of another database.
  SHALE_INVALID_ARGUMENT = 1,
  // Bytes on disk do not decode or fail their checksum.
  SHALE_CORRUPTION = 2,
  // The file system failed an operation.
  SHALE_IO = 3,
  // Another process or handle has the database open.
  SHALE_LOCKED = 4,
  // The database was closed (by `shale_close`, or by `shale_db_free`).
  SHALE_CLOSED = 5,
  // A write, flush or compaction on a database opened read-only.
  SHALE_READ_ONLY = 6,
  // An earlier sync or background write failed; the database takes no more
  // writes until it is reopened.
  SHALE_POISONED = 7,
  // The directory holds something that is not a shale database (or, with
  // create_if_missing off, nothing).
  SHALE_NOT_A_DATABASE = 8,
  // A bug in shale (a broken invariant, or a panic caught at the boundary).
  SHALE_INTERNAL = 9,
  // `shale_close`: the database is closed (synced, its lock released), but
  // the engine still saw snapshots or iterators open. `shale_close`
  // releases its handles' first, so this happens only when one is freed
  // on another thread during the close.
  SHALE_LIVE_HANDLES = 10,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum shale_code_t shale_code_t;
#else
typedef int32_t shale_code_t;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

// A write batch: puts, deletes and range deletions applied atomically, in
// order (a later operation on the same key wins; a range deletion deletes
// what the operations before it wrote), by `shale_write`. Belongs to no
// database: one batch may be written to any database, any number of times.
// Made by `shale_batch_create`, freed by `shale_batch_free`. The batch copies
// the keys and values given to it. Thread safety: calls are serialized, so
// concurrent use is safe, but a batch is meant for one thread at a time.
typedef struct shale_batch_t shale_batch_t;

// An open database (or a closed one, until freed).
//
// Made by `shale_open` or `shale_open_read_only`; `shale_close` closes it
// (syncing the write-ahead log) and `shale_db_free` frees the handle (closing
// it first if still open). After close every call on it, and on the
// iterators and snapshots made from it, returns `SHALE_CLOSED`; those handles
// must still be freed. Thread safety: every function may be called on one
// database handle from any number of threads at once; `shale_close` waits for
// the calls in progress. Freeing it while another thread uses it, or using it
// after `shale_db_free`, is undefined behaviour.
typedef struct shale_db_t shale_db_t;

// An iterator over the keys and values of a database or a snapshot, in key
// order, within optional bounds, forward and backward. It reads the state of
// the moment it was made (later writes are not seen). Unpositioned until one
// of the seek functions. Made by `shale_iterator_create`, freed by
// `shale_iterator_free`. Closing the database releases what it holds: every
// call on it then fails with `SHALE_CLOSED`, and the handle must still be
// freed. Thread safety: calls are serialized, so concurrent use is safe, but
// one iterator has one position: use it from one thread at a time.
typedef struct shale_iterator_t shale_iterator_t;

// Options of `shale_open` and `shale_open_read_only`: the engine's defaults
// until set. Made by `shale_options_create`, freed by `shale_options_free`;
// `shale_open` copies them, so they may be freed or changed right after.
// Thread safety: the setters may be called from any thread (they are
// serialized); a handle is normally used by one thread.
typedef struct shale_options_t shale_options_t;

// A value read by `shale_get_pinned` or `shale_snapshot_get_pinned`: when it
// came from a table it is a slice of the cached data block that holds it (no
// copy), and the handle keeps that whole block (a few KiB) in memory until it
// is freed, even if the block cache evicts it meanwhile; a value from a
// memtable is a copy owned by the handle. `shale_pinned_data` gives its
// bytes; `shale_pinned_free` frees it.
//
// Ownership: the handle owns what it points to and depends on nothing else.
// It stays valid, and its bytes unchanged, after its database is closed (and
// freed) and after its snapshot is freed, until `shale_pinned_free`. Hold
// it briefly (it pins a block); copy a value you keep for long.
//
// Thread safety: it is immutable, so any number of threads may call
// `shale_pinned_data` on it and read its bytes at once. Freeing it while
// another thread uses it, or using it (or its bytes) after it was freed, is
// undefined behaviour.
typedef struct shale_pinned_t shale_pinned_t;

// A snapshot: reads through it see the database as it was when it was taken,
// and the engine keeps the versions it can see while it lives. Made by
// `shale_snapshot_create`; `shale_snapshot_free` releases it. Closing the
// database releases it too: reads through it then fail with `SHALE_CLOSED`,
// and the handle must still be freed. Thread safety: any number of threads
// may read through one snapshot at once.
typedef struct shale_snapshot_t shale_snapshot_t;

// The callback of `shale_multi_get_each`: called once per answered key with
// `ctx`, the key's index in `keys`, and its value (`found` true; `value` is
// valid for reading `value_len` bytes until the callback returns, NULL when
// the value is empty) or no value (`found` false, `value` NULL, length 0).
// Returns true to go on, false to end the call.
typedef bool (*shale_multi_get_each_fn)(void *ctx,
                                        size_t index,
                                        const uint8_t *value,
                                        size_t value_len,
                                        bool found);

// A few of the engine's counters (totals since open; write counters since the
// database was created).
typedef struct shale_metrics_t {
  // Gets served.
  uint64_t gets;
  // Gets that found a value.
  uint64_t gets_found;
  // Gets answered by a memtable.
  uint64_t gets_memtable_hits;
  // Block cache hits, every block kind.
  uint64_t block_cache_hits;
  // Block cache misses, every block kind.
  uint64_t block_cache_misses;
  // Read requests issued to the file system.
  uint64_t physical_reads;
  // Bytes of those reads.
  uint64_t bytes_read;
  // Filter probes that ruled a table out.
  uint64_t filter_negatives;
  // Filter probes that did not.
  uint64_t filter_positives;
  // Bytes of keys and values written by users.
  uint64_t bytes_written_user;
  // Bytes written to the write-ahead log.
  uint64_t bytes_written_wal;
  // Bytes of tables written by flushes and compactions.
  uint64_t bytes_written_tables;
  // Syncs of the write-ahead log.
  uint64_t wal_syncs;
  // Memtable flushes.
  uint64_t flushes;
  // Compactions, every level.
  uint64_t compactions;
  // Write groups held back by a write stall.
  uint64_t stall_count;
  // Microseconds writers spent stalled.
  uint64_t stall_micros;
  // Failed flushes, compactions and file deletions.
  uint64_t background_errors;
  // Tables in L0 now.
  uint64_t l0_files;
  // Estimated bytes compactions still have to rewrite.
  uint64_t pending_compaction_bytes;
  // Bytes held by the block cache now.
  uint64_t block_cache_usage;
  // Capacity of the block cache.
  uint64_t block_cache_capacity;
} shale_metrics_t;

// What an iterator reads: all fields may be zero (NULL), meaning "the latest
// state, no bounds". Each bound is NULL (none; its length must be 0) or
// `len` bytes (an empty bound is a bound: an empty upper bound admits
// nothing). The options are read by `shale_iterator_create` and not kept.
typedef struct shale_read_options_t {
  // Read as of this snapshot (of the same database), or NULL for the
  // latest state.
  const struct shale_snapshot_t *snapshot;
  // First key to return (inclusive), or NULL.
  const uint8_t *lower_bound;
  // Length of `lower_bound`.
  size_t lower_bound_len;
  // Key to stop before (exclusive), or NULL.
  const uint8_t *upper_bound;
  // Length of `upper_bound`.
  size_t upper_bound_len;
  // Only keys starting with these bytes, or NULL; combined with the bounds
  // (the iterator keeps to both).
  const uint8_t *prefix;
  // Length of `prefix`.
  size_t prefix_len;
} shale_read_options_t;

// The iterator's current entry. When `valid` is false the other fields are
// NULL and 0. The key and value point into the iterator and stay valid until
// its next call that moves it, `shale_iterator_free`, or the close of its
// database: copy what you keep.
typedef struct shale_entry_t {
  // True if the iterator is positioned on a key.
  bool valid;
  // The key.
  const uint8_t *key;
  // Length of the key.
  size_t key_len;
  // The value.
  const uint8_t *value;
  // Length of the value.
  size_t value_len;
} shale_entry_t;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// The name of a code (`"SHALE_IO"`), a static string; `"SHALE_UNKNOWN"` for
// a value that is not a code. One of the three functions that return no
// code (it cannot fail).
const char *shale_code_name(int32_t code);

// Frees memory this library returned: a value from `shale_get`,
// `shale_snapshot_get` or `shale_multi_get`, a message from an `errmsg`
// out-parameter, the text of `shale_stats`. It is `malloc`ed memory, so C's
// `free` does the same. NULL is ignored. Not for handles (a `shale_pinned_t`
// is freed by `shale_pinned_free`). One of the three functions that return
// no code (like `free`, it cannot fail).
//
// # Safety
//
// `ptr` is NULL or memory returned by this library and not freed yet.
void shale_free(void *ptr);

// Makes an empty batch.
//
// # Safety
//
// `out` is valid for writing a pointer; `errmsg` is NULL or valid for writing
// a pointer.
shale_code_t shale_batch_create(struct shale_batch_t **out, char **errmsg);

// Frees a batch. `SHALE_INVALID_ARGUMENT` (and nothing freed) for NULL or a
// pointer that is not a live batch, such as one freed already.
//
// # Safety
//
// `batch` is NULL or a pointer returned by this library; no other thread
// uses it.
shale_code_t shale_batch_free(struct shale_batch_t *batch, char **errmsg);

// Adds a put of `key` -> `value` (the empty key is a key like any other).
//
// # Safety
//
// `batch` is a live batch; `key` and `value` are NULL (with length 0) or
// valid for reading their lengths; `errmsg` is NULL or valid for writing a
// pointer.
shale_code_t shale_batch_put(struct shale_batch_t *batch,
                             const uint8_t *key,
                             size_t key_len,
                             const uint8_t *value,
                             size_t value_len,
                             char **errmsg);

// Adds a deletion of `key`.
//
// # Safety
//
// As for `shale_batch_put`.
shale_code_t shale_batch_delete(struct shale_batch_t *batch,
                                const uint8_t *key,
                                size_t key_len,
                                char **errmsg);

// Adds a deletion of every key in `[start, end)` written before the batch is
// applied (one small operation, whatever the range holds; a put of a key in
// the range that comes later in the same batch is kept). `start == end` is an
// empty range: nothing is added. `start > end` is `SHALE_INVALID_ARGUMENT`
// and nothing is added (the batch stays as it was, so it can still be
// written).
//
// # Safety
//
// `batch` is a live batch; `start` and `end` are NULL (with length 0) or
// valid for reading their lengths; `errmsg` is NULL or valid for writing a
// pointer.
shale_code_t shale_batch_delete_range(struct shale_batch_t *batch,
                                      const uint8_t *start,
                                      size_t start_len,
                                      const uint8_t *end,
                                      size_t end_len,
                                      char **errmsg);

// Removes every operation.
//
// # Safety
//
// `batch` is a live batch; `errmsg` is NULL or valid for writing a pointer.
shale_code_t shale_batch_clear(struct shale_batch_t *batch, char **errmsg);

// Stores the number of operations in `*count`.
//
// # Safety
//
// `batch` is a live batch; `count` is valid for writes; `errmsg` is NULL or
// valid for writing a pointer.
shale_code_t shale_batch_count(const struct shale_batch_t *batch, size_t *count, char **errmsg);

// Stores the size of the batch's encoding in `*bytes` (what it adds to the
// write-ahead log).
//
// # Safety
//
// As for `shale_batch_count`.
shale_code_t shale_batch_size(const struct shale_batch_t *batch, size_t *bytes, char **errmsg);

// Opens (or, with create_if_missing, creates) the database in the directory
// `path` (a NUL-terminated string) with `options` (NULL: the defaults), and
// stores a new handle in `*out`. `SHALE_LOCKED` if another handle or process
// has it open.
//
// # Safety
//
// `path` is NULL or a NUL-terminated string; `options` is NULL or a live
// options handle; `out` is valid for writing a pointer; `errmsg` is NULL or
// valid for writing a pointer.
shale_code_t shale_open(const char *path,
                        const struct shale_options_t *options,
                        struct shale_db_t **out,
                        char **errmsg);

// Opens the database in `path` for reading only: nothing is written (the logs
// are replayed into memory), any number of read-only handles may be open at
// once, never together with a read-write one (`SHALE_LOCKED`). Writes,
// flushes and compactions fail with `SHALE_READ_ONLY`.
//
// # Safety
//
// As for `shale_open`.
shale_code_t shale_open_read_only(const char *path,
                                  const struct shale_options_t *options,
                                  struct shale_db_t **out,
                                  char **errmsg);

// Closes the database: releases what its iterators and snapshots hold (they
// fail with `SHALE_CLOSED` from now on), stops the background threads and
// syncs the write-ahead log, returning a failure of that sync. Waits for
// calls in progress on other threads. `SHALE_CLOSED` if closed already. The
// handle stays allocated until `shale_db_free`.
//
// # Safety
//
// `db` is a live database handle; `errmsg` is NULL or valid for writing a
// pointer.
shale_code_t shale_close(struct shale_db_t *db, char **errmsg);

// Frees a database handle, closing the database first if it is open (and
// returning that close's failure; the handle is freed either way).
// `SHALE_INVALID_ARGUMENT` (and nothing done) for NULL, a pointer that is
// not a live database handle, such as one freed already, and from inside a
// callback of a call on this database.
//
// # Safety
//
// `db` is NULL or a pointer returned by this library; no other thread uses
// the handle.
shale_code_t shale_db_free(struct shale_db_t *db, char **errmsg);

// Sets `key` to `value` (synced if the options said so). The empty key is a
// key like any other.
//
// # Safety
//
// `db` is a live database handle; `key` and `value` are NULL (with length 0)
// or valid for reading their lengths; `errmsg` is NULL or valid for writing a
// pointer.
shale_code_t shale_put(struct shale_db_t *db,
                       const uint8_t *key,
                       size_t key_len,
                       const uint8_t *value,
                       size_t value_len,
                       char **errmsg);

// Deletes `key` (synced if the options said so). Deleting a missing key is
// not an error.
//
// # Safety
//
// As for `shale_put`.
shale_code_t shale_delete(struct shale_db_t *db, const uint8_t *key, size_t key_len, char **errmsg);

// Deletes every key in `[start, end)` (synced if the options said so): one
// small write whatever the range holds. Keys written later are not affected,
// and snapshots taken before still see the keys. `start == end` is an empty
// range and does nothing; `start > end` is `SHALE_INVALID_ARGUMENT`. The
// empty string is the smallest key, so `[empty, end)` deletes every key
// below `end`.
//
// # Safety
//
// `db` is a live database handle; `start` and `end` are NULL (with length 0)
// or valid for reading their lengths; `errmsg` is NULL or valid for writing a
// pointer.
shale_code_t shale_delete_range(struct shale_db_t *db,
                                const uint8_t *start,
                                size_t start_len,
                                const uint8_t *end,
                                size_t end_len,
                                char **errmsg);

// Applies `batch` atomically, syncing the write-ahead log first if `sync`.
// The batch is not changed (it can be written again, or cleared and reused).
//
// # Safety
//
// `db` is a live database handle; `batch` a live batch handle; `errmsg` is
// NULL or valid for writing a pointer.
shale_code_t shale_write(struct shale_db_t *db,
                         const struct shale_batch_t *batch,
                         bool sync,
                         char **errmsg);

// Reads `key` in the latest state. Found: `*found` is true and `*value`
// holds a copy of the value (`*value_len` bytes, malloc'ed, never NULL; the
// caller frees it with `shale_free`), copied once, straight from the cached
// block of a table. Missing: `SHALE_OK`, `*found` false, `*value` untouched.
//
// # Safety
//
// `db` is a live database handle; `key` is NULL (with length 0) or valid for
// reading `key_len` bytes; `value`, `value_len` and `found` are valid for
// writes; `errmsg` is NULL or valid for writing a pointer.
shale_code_t shale_get(struct shale_db_t *db,
                       const uint8_t *key,
                       size_t key_len,
                       uint8_t **value,
                       size_t *value_len,
                       bool *found,
                       char **errmsg);

// Reads `key` into the caller's buffer: `*value_len` is the value's full
// length, and the first `min(*value_len, buf_cap)` bytes are copied to `buf`
// (straight from the cached block of a table: the only copy).
// When `*value_len > buf_cap`, call again with a larger buffer (the value may
// have changed meanwhile). Missing: `SHALE_OK` with `*found` false. With
// `buf_cap` 0 (and `buf` NULL) it only tells whether the key exists and how
// long its value is.
//
// # Safety
//
// `db` is a live database handle; `key` as for `shale_get`; `buf` NULL (with
// `buf_cap` 0) or valid for writing `buf_cap` bytes; `value_len` and `found`
// valid for writes; `errmsg` NULL or valid for writing a pointer.
shale_code_t shale_get_into(struct shale_db_t *db,
                            const uint8_t *key,
                            size_t key_len,
                            uint8_t *buf,
                            size_t buf_cap,
                            size_t *value_len,
                            bool *found,
                            char **errmsg);

// Reads `key` in the latest state without copying the value: found,
// `*found` is true and `*out` a new `shale_pinned_t` (for a value from a
// table, a slice of its cached data block, which the handle keeps in memory;
// for a value from a memtable, a copy); `shale_pinned_data` gives its bytes
// and the caller frees it with `shale_pinned_free`. Missing: `SHALE_OK`,
// `*found` false and `*out` NULL. On failure `*out` is untouched. The handle
// stays valid after the database is closed, until freed.
//
// # Safety
//
// `db` is a live database handle; `key` is NULL (with length 0) or valid for
// reading `key_len` bytes; `out` and `found` are valid for writes; `errmsg`
// is NULL or valid for writing a pointer.
shale_code_t shale_get_pinned(struct shale_db_t *db,
                              const uint8_t *key,
                              size_t key_len,
                              struct shale_pinned_t **out,
                              bool *found,
                              char **errmsg);

// Flushes the memtable to a table and waits until every memtable is flushed
// (durable, and the write-ahead logs they came from deleted).
//
// # Safety
//
// `db` is a live database handle; `errmsg` is NULL or valid for writing a
// pointer.
shale_code_t shale_flush(struct shale_db_t *db, char **errmsg);

// Makes every write acknowledged so far durable (it survives a machine
// crash) by syncing the write-ahead log, without flushing the memtable: no
// table is written (`shale_flush` does that). A failed sync poisons the
// database: this call and every later write fail with `SHALE_POISONED`
// until it is reopened. `SHALE_READ_ONLY` on a read-only database.
//
// # Safety
//
// As for `shale_flush`.
shale_code_t shale_sync(struct shale_db_t *db, char **errmsg);

// Flushes, then merges every table into the last level, dropping versions no
// snapshot can see and deletions that shadow nothing.
//
// # Safety
//
// As for `shale_flush`.
shale_code_t shale_compact_all(struct shale_db_t *db, char **errmsg);

// Compacts the keys in `[start, end]` (both inclusive; a NULL `start` or
// `end` leaves that end open): flushes the memtable, then merges the tables
// holding keys of the range down the tree, so that overwritten versions and
// deletions in it that no snapshot needs are gone from disk. Runs beside the
// automatic compactions. `SHALE_INVALID_ARGUMENT` when `start > end`.
//
// # Safety
//
// `db` is a live database handle; `start` and `end` are NULL (with length 0)
// or valid for reading their lengths; `errmsg` is NULL or valid for writing a
// pointer.
shale_code_t shale_compact_range(struct shale_db_t *db,
                                 const uint8_t *start,
                                 size_t start_len,
                                 const uint8_t *end,
                                 size_t end_len,
                                 char **errmsg);

// Reads `n` keys in one state of the database (no write lands between two
// of them): key `i` is `keys[i]` of `key_lens[i]` bytes. For each, `found[i]`
// says whether it exists and, if so, `values[i]` holds a copy of its value
// (`value_lens[i]` bytes, malloc'ed, freed by the caller with `shale_free`);
// for a missing key `values[i]` is NULL and `value_lens[i]` 0. On failure
// nothing is allocated. `n` may be 0 (then every array may be NULL; a closed
// database is still `SHALE_CLOSED`).
//
// # Safety
//
// `db` is a live database handle; `keys` and `key_lens` are valid for reading
// `n` elements and each `keys[i]` is NULL (with length 0) or valid for reading
// `key_lens[i]` bytes; `values`, `value_lens` and `found` are valid for
// writing `n` elements; `errmsg` is NULL or valid for writing a pointer.
shale_code_t shale_multi_get(struct shale_db_t *db,
                             const uint8_t *const *keys,
                             const size_t *key_lens,
                             size_t n,
                             uint8_t **values,
                             size_t *value_lens,
                             bool *found,
                             char **errmsg);

// Reads `n` keys with up to `reads_in_flight` device reads in flight from
// this thread (at most 64 are kept), and calls `callback` for each key as
// soon as its value is known, in the order the answers come (not the keys'
// order): a key whose block is not cached waits for its read while the next
// keys start. All keys are read in one state of the database (the one
// current when the call starts). On a file system that does not batch reads
// the keys go in groups of `reads_in_flight`, each group answered in order.
// `callback` returning false ends the call with `SHALE_OK`; the first error
// ends it with that error (keys answered before it stay answered). The
// callback may call other read functions of this library on the same
// database; `shale_close` of this database from inside it is
// `SHALE_INVALID_ARGUMENT` (from another thread it waits for this call).
// `SHALE_INVALID_ARGUMENT` when `reads_in_flight` is 0 or `callback` is
// NULL. Each answered key counts as one Get.
//
// # Safety
//
// `db` is a live database handle; `keys` and `key_lens` are valid for reading
// `n` elements (NULL when `n` is 0) and each `keys[i]` is NULL (with length
// 0) or valid for reading `key_lens[i]` bytes, and stay so until the call
// returns; `callback` is safe to call with `ctx`; `errmsg` is NULL or valid
// for writing a pointer.
shale_code_t shale_multi_get_each(struct shale_db_t *db,
                                  const uint8_t *const *keys,
                                  const size_t *key_lens,
                                  size_t n,
                                  size_t reads_in_flight,
                                  shale_multi_get_each_fn callback,
                                  void *ctx,
                                  char **errmsg);

// Fills `*out` with the engine's counters.
//
// # Safety
//
// `db` is a live database handle; `out` is valid for writing a
// `shale_metrics_t`; `errmsg` is NULL or valid for writing a pointer.
shale_code_t shale_metrics(struct shale_db_t *db, struct shale_metrics_t *out, char **errmsg);

// The database's statistics as text for people (what `shale stats` prints:
// tables and bytes per level, scores, compactions, write amplification,
// stalls, reads per block kind, caches). Stored NUL-terminated in `*text`
// (malloc'ed; the caller frees it with `shale_free`). The format may change.
//
// # Safety
//
// `db` is a live database handle; `text` is valid for writing a pointer;
// `errmsg` is NULL or valid for writing a pointer.
shale_code_t shale_stats(struct shale_db_t *db, char **text, char **errmsg);

// Makes an iterator over `db` with `options` (NULL: the latest state, no
// bounds) and stores it in `*out`. `SHALE_INVALID_ARGUMENT` for a snapshot of
// another database; `SHALE_CLOSED` for a snapshot released by a close.
//
// # Safety
//
// `db` is a live database handle; `options` is NULL or valid for reading a
// `shale_read_options_t` whose pointers are NULL or valid for their lengths
// (and `snapshot` NULL or a live snapshot handle); `out` is valid for writing
// a pointer; `errmsg` is NULL or valid for writing a pointer.
shale_code_t shale_iterator_create(struct shale_db_t *db,
                                   const struct shale_read_options_t *options,
                                   struct shale_iterator_t **out,
                                   char **errmsg);

// Frees an iterator (also after its database closed). `SHALE_INVALID_ARGUMENT`
// (and nothing freed) for NULL or a pointer that is not a live iterator, such
// as one freed already.
//
// # Safety
//
// `iterator` is NULL or a pointer returned by this library; no other thread
// uses it.
shale_code_t shale_iterator_free(struct shale_iterator_t *iterator, char **errmsg);

// Positions the iterator on the first key (at or after the lower bound). This
// and every other move stores the entry it lands on in `*entry` when `entry`
// is not NULL (one call per step), and returns `SHALE_OK` when positioned or
// at the end, or the error (I/O, corruption) that ended the iteration (as
// `shale_iterator_status` does).
//
// # Safety
//
// `iterator` is a live iterator; `entry` is NULL or valid for writing a
// `shale_entry_t`; `errmsg` is NULL or valid for writing a pointer.
shale_code_t shale_iterator_seek_to_first(struct shale_iterator_t *iterator,
                                          struct shale_entry_t *entry,
                                          char **errmsg);

// Positions the iterator on the last key (before the upper bound).
//
// # Safety
//
// As for `shale_iterator_seek_to_first`.
shale_code_t shale_iterator_seek_to_last(struct shale_iterator_t *iterator,
                                         struct shale_entry_t *entry,
                                         char **errmsg);

// Positions the iterator on the first key `>= key` (within the bounds).
//
// # Safety
//
// As for `shale_iterator_seek_to_first`; `key` is NULL (with length 0) or
// valid for reading `key_len` bytes.
shale_code_t shale_iterator_seek(struct shale_iterator_t *iterator,
                                 const uint8_t *key,
                                 size_t key_len,
                                 struct shale_entry_t *entry,
                                 char **errmsg);

// Positions the iterator on the last key `<= key` (within the bounds).
//
// # Safety
//
// As for `shale_iterator_seek`.
shale_code_t shale_iterator_seek_for_prev(struct shale_iterator_t *iterator,
                                          const uint8_t *key,
                                          size_t key_len,
                                          struct shale_entry_t *entry,
                                          char **errmsg);

// Moves to the next key; does nothing when not positioned.
//
// # Safety
//
// As for `shale_iterator_seek_to_first`.
shale_code_t shale_iterator_next(struct shale_iterator_t *iterator,
                                 struct shale_entry_t *entry,
                                 char **errmsg);

// Moves to the previous key; does nothing when not positioned.
//
// # Safety
//
// As for `shale_iterator_seek_to_first`.
shale_code_t shale_iterator_prev(struct shale_iterator_t *iterator,
                                 struct shale_entry_t *entry,
                                 char **errmsg);

// Stores in `*valid` whether the iterator is positioned on a key.
//
// # Safety
//
// `iterator` is a live iterator; `valid` is valid for writes; `errmsg` is
// NULL or valid for writing a pointer.
shale_code_t shale_iterator_valid(const struct shale_iterator_t *iterator,
                                  bool *valid,
                                  char **errmsg);

// Stores the current entry in `*entry` without moving.
//
// # Safety
//
// `iterator` is a live iterator; `entry` is valid for writing a
// `shale_entry_t`; `errmsg` is NULL or valid for writing a pointer.
shale_code_t shale_iterator_entry(const struct shale_iterator_t *iterator,
                                  struct shale_entry_t *entry,
                                  char **errmsg);

// Stores the current key in `*key` and `*key_len` (pointing into the
// iterator, valid until it moves, is freed or its database closes).
// `SHALE_INVALID_ARGUMENT` when the iterator is not positioned.
//
// # Safety
//
// `iterator` is a live iterator; `key` and `key_len` are valid for writes;
// `errmsg` is NULL or valid for writing a pointer.
shale_code_t shale_iterator_key(const struct shale_iterator_t *iterator,
                                const uint8_t **key,
                                size_t *key_len,
                                char **errmsg);

// Stores the current value in `*value` and `*value_len` (as for
// `shale_iterator_key`).
//
// # Safety
//
// As for `shale_iterator_key`.
shale_code_t shale_iterator_value(const struct shale_iterator_t *iterator,
                                  const uint8_t **value,
                                  size_t *value_len,
                                  char **errmsg);

// Returns the error (I/O, corruption) that ended the iteration, or
// `SHALE_OK`: reaching the end is not an error.
//
// # Safety
//
// `iterator` is a live iterator; `errmsg` is NULL or valid for writing a
// pointer.
shale_code_t shale_iterator_status(const struct shale_iterator_t *iterator, char **errmsg);

// Makes options holding the engine's defaults (create_if_missing on, a
// 32 MiB block cache, 64 MiB write buffer, 1000 open files, binary fuse
// filters of 9 bits per key on every level but the last, writes not synced).
//
// # Safety
//
// `out` is valid for writing a pointer; `errmsg` is NULL or valid for
// writing a pointer.
shale_code_t shale_options_create(struct shale_options_t **out, char **errmsg);

// Frees options. `SHALE_INVALID_ARGUMENT` (and nothing freed) for NULL or a
// pointer that is not live options.
//
// # Safety
//
// `options` is NULL or a pointer returned by this library.
shale_code_t shale_options_free(struct shale_options_t *options, char **errmsg);

// Creates the database if the directory holds none (default on).
//
// # Safety
//
// `options` is a live options handle; `errmsg` is NULL or valid for writing a
// pointer.
shale_code_t shale_options_set_create_if_missing(struct shale_options_t *options,
                                                 bool value,
                                                 char **errmsg);

// Fails the open if a database exists (default off).
//
// # Safety
//
// As for `shale_options_set_create_if_missing`.
shale_code_t shale_options_set_error_if_exists(struct shale_options_t *options,
                                               bool value,
                                               char **errmsg);

// Block cache capacity in bytes (default 32 MiB).
//
// # Safety
//
// As for `shale_options_set_create_if_missing`.
shale_code_t shale_options_set_block_cache_bytes(struct shale_options_t *options,
                                                 uint64_t bytes,
                                                 char **errmsg);

// Size at which the memtable is flushed, in bytes (default 64 MiB; 0 is
// `SHALE_INVALID_ARGUMENT`).
//
// # Safety
//
// As for `shale_options_set_create_if_missing`.
shale_code_t shale_options_set_write_buffer_size(struct shale_options_t *options,
                                                 size_t bytes,
                                                 char **errmsg);

// Table files kept open (default 1000; 0 is `SHALE_INVALID_ARGUMENT`).
//
// # Safety
//
// As for `shale_options_set_create_if_missing`.
shale_code_t shale_options_set_max_open_files(struct shale_options_t *options,
                                              size_t files,
                                              char **errmsg);

// Background threads for flushes and compactions (default 2; 0 or more than
// 256 is `SHALE_INVALID_ARGUMENT`).
//
// # Safety
//
// As for `shale_options_set_create_if_missing`.
shale_code_t shale_options_set_max_background_jobs(struct shale_options_t *options,
                                                   size_t jobs,
                                                   char **errmsg);

// The filter policy: `kind` is `SHALE_FILTER_NONE`, `SHALE_FILTER_BLOOM` or
// `SHALE_FILTER_BINARY_FUSE`; `bits_per_key` its memory budget (10 bits a
// key: about 1% false positives for Bloom; 1 to 32); `levels` is
// `SHALE_FILTER_LEVELS_ALL_BUT_LAST` or `SHALE_FILTER_LEVELS_ALL` (ignored
// for `SHALE_FILTER_NONE`). Anything else is `SHALE_INVALID_ARGUMENT`.
//
// # Safety
//
// As for `shale_options_set_create_if_missing`.
shale_code_t shale_options_set_filter_policy(struct shale_options_t *options,
                                             int32_t kind,
                                             uint32_t bits_per_key,
                                             int32_t levels,
                                             char **errmsg);

// Whether `shale_put`, `shale_delete` and `shale_delete_range` sync the
// write-ahead log before returning (default off: a write survives a crash of
// the process, not of the machine). `shale_write` takes its own flag.
//
// # Safety
//
// As for `shale_options_set_create_if_missing`.
shale_code_t shale_options_set_sync(struct shale_options_t *options, bool value, char **errmsg);

// Most subcompactions one compaction is split into, each a disjoint key range
// merged on a thread of its own that lives as long as the compaction
// (default 2; 1 to 64: 0 or more than 64 is `SHALE_INVALID_ARGUMENT`).
//
// # Safety
//
// As for `shale_options_set_create_if_missing`.
shale_code_t shale_options_set_max_subcompactions(struct shale_options_t *options,
                                                  size_t n,
                                                  char **errmsg);

// CPU nice value of the threads that merge compactions: 0, the default, runs
// them at the process's priority; 1 to 19 lower them (and their I/O to the
// lowest best-effort level), so that Gets and writes run first on a machine
// whose cores are busy; flushes keep the process's priority. Outside 0 to
// 19 is `SHALE_INVALID_ARGUMENT` (the open refuses anything but 0 outside
// Linux).
//
// # Safety
//
// As for `shale_options_set_create_if_missing`.
shale_code_t shale_options_set_compaction_nice(struct shale_options_t *options,
                                               int32_t nice,
                                               char **errmsg);

// Bytes per second writes are let through while they are delayed (L0 at the
// slowdown trigger, or too much compaction debt): default 16 MiB/s; 0 is
// `SHALE_INVALID_ARGUMENT`. While a delay lasts the rate adapts to the debt
// between 16 KiB/s (or this rate, if lower) and this rate.
//
// # Safety
//
// As for `shale_options_set_create_if_missing`.
shale_code_t shale_options_set_delayed_write_rate(struct shale_options_t *options,
                                                  uint64_t bytes_per_sec,
                                                  char **errmsg);

// Cap on the bytes per second flushes and compactions write together (a
// token bucket); 0 means no limit (the default). Every value is valid.
//
// # Safety
//
// As for `shale_options_set_create_if_missing`.
shale_code_t shale_options_set_compaction_rate_limit(struct shale_options_t *options,
                                                     uint64_t bytes_per_sec,
                                                     char **errmsg);

// Bytes a compaction reads from one input table at a time, bypassing the
// page cache where the file system allows (default 512 KiB; 0 reads block by
// block, as Gets do; more than 64 MiB is `SHALE_INVALID_ARGUMENT`).
//
// # Safety
//
// As for `shale_options_set_create_if_missing`.
shale_code_t shale_options_set_compaction_readahead_bytes(struct shale_options_t *options,
                                                          size_t bytes,
                                                          char **errmsg);

// Which table metadata the open table readers hold, outside the block cache
// and not charged to it (so a Get never has to read it again after the
// first use): `SHALE_TABLE_METADATA_NONE` (the default: all of it goes
// through the block cache), `SHALE_TABLE_METADATA_INDEX`,
// `SHALE_TABLE_METADATA_ALL_BUT_LAST` or `SHALE_TABLE_METADATA_ALL`.
// Anything else is `SHALE_INVALID_ARGUMENT`.
//
// # Safety
//
// As for `shale_options_set_create_if_missing`.
shale_code_t shale_options_set_table_metadata(struct shale_options_t *options,
                                              int32_t placement,
                                              char **errmsg);

// The L0 table counts at which L0 is compacted, at which writes are delayed
// to the delayed write rate and at which writes wait for compactions. A 0
// keeps the engine's default: for `compaction` 8 when L0 tables carry
// filters and 4 when they do not (decided at open from the filter policy),
// 20 for `slowdown`, 36 for `stop`. Counts that do not satisfy
// `compaction <= slowdown <= stop` (a default `compaction` counted as 4
// here; the open checks it against the filter policy) are
// `SHALE_INVALID_ARGUMENT`.
//
// # Safety
//
// As for `shale_options_set_create_if_missing`.
shale_code_t shale_options_set_l0_triggers(struct shale_options_t *options,
                                           size_t compaction,
                                           size_t slowdown,
                                           size_t stop,
                                           char **errmsg);

// Whether each memtable carries a Bloom filter over its keys, so that a Get
// of a key it lacks skips its skiplist search (default on; it takes
// `write_buffer_size / 32` bytes of each memtable). Every value is valid.
//
// # Safety
//
// As for `shale_options_set_create_if_missing`.
shale_code_t shale_options_set_memtable_filter(struct shale_options_t *options,
                                               bool value,
                                               char **errmsg);

// The bytes of a pinned value: returns their address and stores their
// length in `*len` (when `len` is not NULL). For a live handle the address
// is never NULL (an empty value has a valid address and length 0) and stays
// valid, with the same bytes, until `shale_pinned_free`, also after the
// database is closed.
//
// One of the three functions that return no code (with `shale_free` and
// `shale_code_name`): a live handle cannot fail. For NULL or a handle of
// another kind it returns NULL and stores 0 in `*len`.
//
// # Safety
//
// `pinned` is NULL or a live handle made by this library; `len` is NULL or
// valid for writing a `size_t`.
const uint8_t *shale_pinned_data(const struct shale_pinned_t *pinned, size_t *len);

// Frees a pinned value (and releases the block it pins), also after its
// database was closed. `SHALE_INVALID_ARGUMENT` (and nothing freed) for NULL
// or a pointer that is not a live pinned value, such as one freed already.
//
// # Safety
//
// `pinned` is NULL or a pointer returned by this library; no other thread
// uses it; `errmsg` is NULL or valid for writing a pointer.
shale_code_t shale_pinned_free(struct shale_pinned_t *pinned, char **errmsg);

// Takes a snapshot of the database's current state.
//
// # Safety
//
// `db` is a live database handle; `out` is valid for writing a pointer;
// `errmsg` is NULL or valid for writing a pointer.
shale_code_t shale_snapshot_create(struct shale_db_t *db,
                                   struct shale_snapshot_t **out,
                                   char **errmsg);

// Releases a snapshot and frees its handle (also after the database closed).
// `SHALE_INVALID_ARGUMENT` (and nothing freed) for NULL or a pointer that is
// not a live snapshot, such as one freed already.
//
// # Safety
//
// `snapshot` is NULL or a pointer returned by this library; no other thread
// uses it.
shale_code_t shale_snapshot_free(struct shale_snapshot_t *snapshot, char **errmsg);

// Like `shale_get`, as of the snapshot.
//
// # Safety
//
// As for `shale_get`, with a live snapshot handle for `snapshot`.
shale_code_t shale_snapshot_get(const struct shale_snapshot_t *snapshot,
                                const uint8_t *key,
                                size_t key_len,
                                uint8_t **value,
                                size_t *value_len,
                                bool *found,
                                char **errmsg);

// Like `shale_get_into`, as of the snapshot.
//
// # Safety
//
// As for `shale_get_into`, with a live snapshot handle for `snapshot`.
shale_code_t shale_snapshot_get_into(const struct shale_snapshot_t *snapshot,
                                     const uint8_t *key,
                                     size_t key_len,
                                     uint8_t *buf,
                                     size_t buf_cap,
                                     size_t *value_len,
                                     bool *found,
                                     char **errmsg);

// Like `shale_get_pinned`, as of the snapshot. The handle stays valid after
// the snapshot is freed and after the database is closed, until
// `shale_pinned_free`.
//
// # Safety
//
// As for `shale_get_pinned`, with a live snapshot handle for `snapshot`.
shale_code_t shale_snapshot_get_pinned(const struct shale_snapshot_t *snapshot,
                                       const uint8_t *key,
                                       size_t key_len,
                                       struct shale_pinned_t **out,
                                       bool *found,
                                       char **errmsg);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* SHALE_H */
