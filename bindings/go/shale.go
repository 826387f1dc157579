// Package shale is the Go binding of shale, an embedded LSM key-value engine
// written in Rust, through its C API (crates/shale-capi, linked statically
// with cgo). Build the library first: `cargo build --release -p shale-capi`
// at the repository's root (scripts/capi.sh does it and runs the tests).
//
// A DB is safe for concurrent use. Iterators and batches are not: use each
// from one goroutine at a time. Each operation is one cgo call; keys and
// values are passed to C without copying (the C side copies what it keeps),
// and a Get allocates only the value it returns.
//
// After DB.Close, every method of the DB and of the iterators and snapshots
// made from it returns ErrClosed. Handles left unclosed are freed when they
// are garbage-collected, but close them: an open iterator or snapshot keeps
// the engine's files alive.
package shale

/*
#cgo CFLAGS: -I${SRCDIR}/../../crates/shale-capi/include
#cgo LDFLAGS: ${SRCDIR}/../../target/release/libshale_capi.a -lm -ldl -lpthread -lrt -lutil -lgcc_s
#cgo noescape shale_get_into
#cgo nocallback shale_get_into
#cgo noescape shale_put
#cgo nocallback shale_put
#cgo noescape shale_delete
#cgo nocallback shale_delete
#cgo noescape shale_delete_range
#cgo nocallback shale_delete_range
#cgo noescape shale_batch_put
#cgo nocallback shale_batch_put
#cgo noescape shale_batch_delete
#cgo nocallback shale_batch_delete
#cgo noescape shale_batch_delete_range
#cgo nocallback shale_batch_delete_range
#cgo noescape shale_iterator_next
#cgo nocallback shale_iterator_next
#cgo noescape shale_iterator_prev
#cgo nocallback shale_iterator_prev
#cgo noescape shale_snapshot_get_into
#cgo nocallback shale_snapshot_get_into
#include <stdlib.h>
#include "shale.h"

// Frees the n values shale_multi_get returned (NULL for a missing key is
// ignored): one cgo call for all of them.
static void shale_go_free_values(uint8_t **values, size_t n) {
	for (size_t i = 0; i < n; i++) shale_free(values[i]);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Code is the C API's result code (shale_code_t).
type Code int

// The codes of the C API (see docs/capi.md).
const (
	CodeOK              Code = C.SHALE_OK
	CodeInvalidArgument Code = C.SHALE_INVALID_ARGUMENT
	CodeCorruption      Code = C.SHALE_CORRUPTION
	CodeIO              Code = C.SHALE_IO
	CodeLocked          Code = C.SHALE_LOCKED
	CodeClosed          Code = C.SHALE_CLOSED
	CodeReadOnly        Code = C.SHALE_READ_ONLY
	CodePoisoned        Code = C.SHALE_POISONED
	CodeNotADatabase    Code = C.SHALE_NOT_A_DATABASE
	CodeInternal        Code = C.SHALE_INTERNAL
)

// String is the code's C name ("SHALE_IO").
func (c Code) String() string {
	return C.GoString(C.shale_code_name(C.int32_t(c)))
}

// Error is a failure reported by the engine: its code and message.
// errors.Is(err, ErrClosed) (and the other sentinels) compares codes.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "shale: " + e.Code.String()
	}
	return "shale: " + e.Message
}

// Is reports whether target is the sentinel of e's code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Sentinels for errors.Is.
var (
	ErrInvalidArgument = &Error{Code: CodeInvalidArgument}
	ErrCorruption      = &Error{Code: CodeCorruption}
	ErrIO              = &Error{Code: CodeIO}
	ErrLocked          = &Error{Code: CodeLocked}
	// ErrClosed: the database was closed.
	ErrClosed       = &Error{Code: CodeClosed}
	ErrReadOnly     = &Error{Code: CodeReadOnly}
	ErrPoisoned     = &Error{Code: CodePoisoned}
	ErrNotADatabase = &Error{Code: CodeNotADatabase}
	ErrInternal     = &Error{Code: CodeInternal}
	// ErrNotFound is returned by Get for a missing key (Has says false).
	ErrNotFound = errors.New("shale: not found")
)

// check turns a code and its message into an error, freeing the message.
func check(code C.shale_code_t, msg *C.char) error {
	if code == C.SHALE_OK {
		return nil
	}
	e := &Error{Code: Code(code)}
	if msg != nil {
		e.Message = C.GoString(msg)
		C.shale_free(unsafe.Pointer(msg))
	}
	return e
}

// ptr is the address of b's bytes for C (nil for an empty slice: the C API
// takes NULL with length 0 as the empty string).
func ptr(b []byte) *C.uint8_t {
	return (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(b)))
}

// FilterKind selects the filters that let a Get skip tables.
type FilterKind int

// Filter kinds.
const (
	FilterDefault    FilterKind = iota // binary fuse, 9 bits per key, every level but the last
	FilterNone                         // no filters
	FilterBloom                        // blocked Bloom filters
	FilterBinaryFuse                   // binary fuse filters
)

// TableMetadata says which table metadata (indexes and filters) the open
// table readers hold, outside the block cache and not charged to it, so that
// a Get does not read it again after its first use.
type TableMetadata int

// Table metadata placements (the C API's SHALE_TABLE_METADATA_*).
const (
	TableMetadataNone       TableMetadata = iota // all of it goes through the block cache (the default)
	TableMetadataIndex                           // top-level index and index partitions held at every level
	TableMetadataAllButLast                      // every kind held at L0 to L5, the last level's cached
	TableMetadataAll                             // every kind held at every level
)

// Options of Open and OpenReadOnly. The zero value is the engine's defaults.
type Options struct {
	// ErrorIfMissing fails the open when there is no database (by default
	// one is created).
	ErrorIfMissing bool
	// ErrorIfExists fails the open when a database exists.
	ErrorIfExists bool
	// BlockCacheBytes is the block cache's capacity (0: 32 MiB).
	BlockCacheBytes uint64
	// WriteBufferSize is the memtable size at which it is flushed (0: 64 MiB).
	WriteBufferSize int
	// MaxOpenFiles is the number of table files kept open (0: 1000).
	MaxOpenFiles int
	// Filter and BitsPerKey choose the filters (BitsPerKey 0: 10 for Bloom,
	// 9 for binary fuse); FilterAllLevels puts them on the last level too.
	Filter          FilterKind
	BitsPerKey      int
	FilterAllLevels bool
	// MaxSubcompactions is the most key ranges one compaction is split into,
	// each merged on a thread of its own (0: 2; at most 64).
	MaxSubcompactions int
	// CompactionNice is the CPU nice value of the threads that merge
	// compactions (0: the process's priority; 1 to 19 let Gets and writes
	// run first when every core is busy; flushes keep the process's).
	CompactionNice int
	// DelayedWriteRate is the bytes per second writes are let through while
	// L0 or the compaction debt delays them (0: 16 MiB/s).
	DelayedWriteRate uint64
	// CompactionRateLimit caps the bytes per second flushes and compactions
	// write together (0: no limit, the default).
	CompactionRateLimit uint64
	// CompactionReadaheadBytes is what a compaction reads from one input
	// table at a time (0: 512 KiB; negative: block by block, as Gets read;
	// at most 64 MiB).
	CompactionReadaheadBytes int
	// TableMetadata is where table metadata lives (the zero value,
	// TableMetadataNone, is the default: in the block cache).
	TableMetadata TableMetadata
	// L0CompactionTrigger, L0SlowdownWritesTrigger and L0StopWritesTrigger
	// are the L0 table counts at which L0 is compacted (0: 8 when L0 tables
	// carry filters, 4 when they do not), writes are delayed to
	// DelayedWriteRate (0: 20) and writes wait for compactions (0: 36).
	// They must satisfy compaction <= slowdown <= stop, counting a 0 as its
	// default.
	L0CompactionTrigger     int
	L0SlowdownWritesTrigger int
	L0StopWritesTrigger     int
	// NoMemtableFilter leaves out the Bloom filter each memtable keeps over
	// its keys (write_buffer_size / 32 bytes; with it, a Get of a key the
	// memtable lacks skips the memtable's search).
	NoMemtableFilter bool
	// Sync makes Put, Delete and DeleteRange sync the write-ahead log before
	// returning. Batch.Write takes its own flag.
	Sync bool
}

// DB is an open database. Safe for concurrent use.
type DB struct {
	c *C.shale_db_t
}

// Open opens (creating it unless opts.ErrorIfMissing) the database in the
// directory path. opts may be nil.
func Open(path string, opts *Options) (*DB, error) {
	return open(path, opts, false)
}

// OpenReadOnly opens the database in path for reading only: nothing is
// written; writes fail with ErrReadOnly. Several read-only handles may be
// open at once, never with a read-write one (ErrLocked).
func OpenReadOnly(path string, opts *Options) (*DB, error) {
	return open(path, opts, true)
}

func open(path string, opts *Options, readOnly bool) (*DB, error) {
	var o *C.shale_options_t
	var msg *C.char
	if err := check(C.shale_options_create(&o, &msg), msg); err != nil {
		return nil, err
	}
	defer C.shale_options_free(o, nil)
	if opts != nil {
		if err := applyOptions(o, opts); err != nil {
			return nil, err
		}
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var db *C.shale_db_t
	var code C.shale_code_t
	if readOnly {
		code = C.shale_open_read_only(cpath, o, &db, &msg)
	} else {
		code = C.shale_open(cpath, o, &db, &msg)
	}
	if err := check(code, msg); err != nil {
		return nil, err
	}
	d := &DB{c: db}
	// Frees the handle once unreachable (closing it if it was left open).
	runtime.AddCleanup(d, func(c *C.shale_db_t) { C.shale_db_free(c, nil) }, db)
	return d, nil
}

func applyOptions(o *C.shale_options_t, opts *Options) error {
	var msg *C.char
	steps := []func() C.shale_code_t{
		func() C.shale_code_t {
			return C.shale_options_set_create_if_missing(o, C.bool(!opts.ErrorIfMissing), &msg)
		},
		func() C.shale_code_t { return C.shale_options_set_error_if_exists(o, C.bool(opts.ErrorIfExists), &msg) },
		func() C.shale_code_t { return C.shale_options_set_sync(o, C.bool(opts.Sync), &msg) },
	}
	if opts.BlockCacheBytes > 0 {
		steps = append(steps, func() C.shale_code_t {
			return C.shale_options_set_block_cache_bytes(o, C.uint64_t(opts.BlockCacheBytes), &msg)
		})
	}
	if opts.WriteBufferSize > 0 {
		steps = append(steps, func() C.shale_code_t {
			return C.shale_options_set_write_buffer_size(o, C.size_t(opts.WriteBufferSize), &msg)
		})
	}
	if opts.MaxOpenFiles > 0 {
		steps = append(steps, func() C.shale_code_t {
			return C.shale_options_set_max_open_files(o, C.size_t(opts.MaxOpenFiles), &msg)
		})
	}
	if opts.Filter != FilterDefault {
		kind, bits := C.int32_t(C.SHALE_FILTER_NONE), opts.BitsPerKey
		switch opts.Filter {
		case FilterBloom:
			kind = C.SHALE_FILTER_BLOOM
			if bits == 0 {
				bits = 10
			}
		case FilterBinaryFuse:
			kind = C.SHALE_FILTER_BINARY_FUSE
			if bits == 0 {
				bits = 9
			}
		case FilterNone:
		default:
			return &Error{Code: CodeInvalidArgument, Message: "invalid argument: unknown filter kind"}
		}
		levels := C.int32_t(C.SHALE_FILTER_LEVELS_ALL_BUT_LAST)
		if opts.FilterAllLevels {
			levels = C.SHALE_FILTER_LEVELS_ALL
		}
		steps = append(steps, func() C.shale_code_t {
			return C.shale_options_set_filter_policy(o, kind, C.uint32_t(bits), levels, &msg)
		})
	}
	engine, err := engineSteps(o, opts, &msg)
	if err != nil {
		return err
	}
	steps = append(steps, engine...)
	for _, step := range steps {
		if err := check(step(), msg); err != nil {
			return err
		}
	}
	return nil
}

// engineSteps are the calls that set the engine's tuning options of opts
// that are not 0 (their message, on failure, in *msg).
func engineSteps(o *C.shale_options_t, opts *Options, msg **C.char) ([]func() C.shale_code_t, error) {
	for _, f := range []struct {
		name  string
		value int
	}{
		{"MaxSubcompactions", opts.MaxSubcompactions},
		{"L0CompactionTrigger", opts.L0CompactionTrigger},
		{"L0SlowdownWritesTrigger", opts.L0SlowdownWritesTrigger},
		{"L0StopWritesTrigger", opts.L0StopWritesTrigger},
	} {
		if f.value < 0 {
			return nil, &Error{Code: CodeInvalidArgument,
				Message: fmt.Sprintf("invalid argument: %s %d is negative", f.name, f.value)}
		}
	}
	var steps []func() C.shale_code_t
	if opts.MaxSubcompactions > 0 {
		steps = append(steps, func() C.shale_code_t {
			return C.shale_options_set_max_subcompactions(o, C.size_t(opts.MaxSubcompactions), msg)
		})
	}
	if opts.CompactionNice != 0 {
		steps = append(steps, func() C.shale_code_t {
			return C.shale_options_set_compaction_nice(o, C.int32_t(opts.CompactionNice), msg)
		})
	}
	if opts.DelayedWriteRate > 0 {
		steps = append(steps, func() C.shale_code_t {
			return C.shale_options_set_delayed_write_rate(o, C.uint64_t(opts.DelayedWriteRate), msg)
		})
	}
	if opts.CompactionRateLimit > 0 {
		steps = append(steps, func() C.shale_code_t {
			return C.shale_options_set_compaction_rate_limit(o, C.uint64_t(opts.CompactionRateLimit), msg)
		})
	}
	if opts.CompactionReadaheadBytes != 0 {
		bytes := max(opts.CompactionReadaheadBytes, 0)
		steps = append(steps, func() C.shale_code_t {
			return C.shale_options_set_compaction_readahead_bytes(o, C.size_t(bytes), msg)
		})
	}
	if opts.TableMetadata != TableMetadataNone {
		var placement C.int32_t
		switch opts.TableMetadata {
		case TableMetadataIndex:
			placement = C.SHALE_TABLE_METADATA_INDEX
		case TableMetadataAllButLast:
			placement = C.SHALE_TABLE_METADATA_ALL_BUT_LAST
		case TableMetadataAll:
			placement = C.SHALE_TABLE_METADATA_ALL
		default:
			return nil, &Error{Code: CodeInvalidArgument,
				Message: fmt.Sprintf("invalid argument: unknown table metadata placement %d", opts.TableMetadata)}
		}
		steps = append(steps, func() C.shale_code_t {
			return C.shale_options_set_table_metadata(o, placement, msg)
		})
	}
	if opts.NoMemtableFilter {
		steps = append(steps, func() C.shale_code_t {
			return C.shale_options_set_memtable_filter(o, false, msg)
		})
	}
	if opts.L0CompactionTrigger != 0 || opts.L0SlowdownWritesTrigger != 0 || opts.L0StopWritesTrigger != 0 {
		// A 0 is the engine's default (the C API's convention).
		compaction := C.size_t(opts.L0CompactionTrigger)
		slowdown := C.size_t(opts.L0SlowdownWritesTrigger)
		stop := C.size_t(opts.L0StopWritesTrigger)
		steps = append(steps, func() C.shale_code_t {
			return C.shale_options_set_l0_triggers(o, compaction, slowdown, stop, msg)
		})
	}
	return steps, nil
}

// Close closes the database: iterators and snapshots made from it are
// released (their methods return ErrClosed from then on), the background
// threads stop and the write-ahead log is synced (its failure is returned).
// Closing a closed database returns nil.
func (db *DB) Close() error {
	var msg *C.char
	err := check(C.shale_close(db.c, &msg), msg)
	runtime.KeepAlive(db)
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}

// Get returns a copy of the value of key, or ErrNotFound.
func (db *DB) Get(key []byte) ([]byte, error) {
	// One cgo call into a stack buffer (noescape keeps it on the stack), then
	// the exact-size copy returned; a larger value is read again into a
	// buffer of its size.
	var scratch [getScratch]byte
	var valueLen C.size_t
	var found C.bool
	var msg *C.char
	buf, bufCap := (*C.uint8_t)(&scratch[0]), C.size_t(getScratch)
	var out []byte
	for {
		code := C.shale_get_into(db.c, ptr(key), C.size_t(len(key)), buf, bufCap, &valueLen, &found, &msg)
		runtime.KeepAlive(db)
		if err := check(code, msg); err != nil {
			return nil, err
		}
		if !found {
			return nil, ErrNotFound
		}
		if valueLen <= bufCap {
			break
		}
		// The value may change between two calls: loop until it fits.
		out = make([]byte, valueLen)
		buf, bufCap = ptr(out), valueLen
	}
	if out == nil {
		out = make([]byte, valueLen)
		copy(out, scratch[:valueLen])
	}
	return out[:valueLen], nil
}

// getScratch is the size of the stack buffer a Get reads into first.
const getScratch = 256

// Has reports whether key exists.
func (db *DB) Has(key []byte) (bool, error) {
	var valueLen C.size_t
	var found C.bool
	var msg *C.char
	code := C.shale_get_into(db.c, ptr(key), C.size_t(len(key)), nil, 0, &valueLen, &found, &msg)
	runtime.KeepAlive(db)
	if err := check(code, msg); err != nil {
		return false, err
	}
	return bool(found), nil
}

// MultiGet reads every key in one state of the database (no write lands
// between two of them), in one cgo call for all the keys (and one more that
// frees the C copies). The i-th result is a copy of keys[i]'s value, or nil
// when the key is missing; an empty value is an empty, non-nil slice. The
// values share one allocation (each slice's capacity ends at its value).
func (db *DB) MultiGet(keys [][]byte) ([][]byte, error) {
	n := len(keys)
	var msg *C.char
	if n == 0 {
		// Nothing to read, but a closed database is still ErrClosed.
		code := C.shale_multi_get(db.c, nil, nil, 0, nil, nil, nil, &msg)
		runtime.KeepAlive(db)
		if err := check(code, msg); err != nil {
			return nil, err
		}
		return [][]byte{}, nil
	}
	// The array of key pointers is Go memory holding Go pointers: cgo allows
	// it when those are pinned. Empty keys are NULL with length 0.
	var pinner runtime.Pinner
	defer pinner.Unpin()
	keyPtrs := make([]*C.uint8_t, n)
	keyLens := make([]C.size_t, n)
	for i, k := range keys {
		if len(k) > 0 {
			pinner.Pin(&k[0])
			keyPtrs[i] = ptr(k)
		}
		keyLens[i] = C.size_t(len(k))
	}
	values := make([]*C.uint8_t, n)
	valueLens := make([]C.size_t, n)
	found := make([]C.bool, n)
	code := C.shale_multi_get(db.c, &keyPtrs[0], &keyLens[0], C.size_t(n), &values[0], &valueLens[0], &found[0], &msg)
	runtime.KeepAlive(db)
	if err := check(code, msg); err != nil {
		return nil, err
	}
	total := 0
	for i := range n {
		total += int(valueLens[i])
	}
	buf := make([]byte, total)
	out := make([][]byte, n)
	off := 0
	for i := range n {
		if !found[i] {
			continue
		}
		l := int(valueLens[i])
		v := buf[off : off+l : off+l]
		copy(v, unsafe.Slice((*byte)(unsafe.Pointer(values[i])), l))
		out[i] = v
		off += l
	}
	C.shale_go_free_values(&values[0], C.size_t(n))
	return out, nil
}

// Put sets key to value (synced if Options.Sync). The empty key is a key
// like any other.
func (db *DB) Put(key, value []byte) error {
	var msg *C.char
	code := C.shale_put(db.c, ptr(key), C.size_t(len(key)), ptr(value), C.size_t(len(value)), &msg)
	runtime.KeepAlive(db)
	return check(code, msg)
}

// Delete deletes key (a missing key is no error).
func (db *DB) Delete(key []byte) error {
	var msg *C.char
	code := C.shale_delete(db.c, ptr(key), C.size_t(len(key)), &msg)
	runtime.KeepAlive(db)
	return check(code, msg)
}

// DeleteRange deletes every key in [start, end) (synced if Options.Sync): one
// small write whatever the range holds. Keys written later are not affected,
// and snapshots taken before still see the keys. A nil or empty start is the
// empty key, the smallest. start == end does nothing; start > end is
// ErrInvalidArgument.
func (db *DB) DeleteRange(start, end []byte) error {
	var msg *C.char
	code := C.shale_delete_range(db.c, ptr(start), C.size_t(len(start)), ptr(end), C.size_t(len(end)), &msg)
	runtime.KeepAlive(db)
	return check(code, msg)
}

// Flush writes the memtable to a table and waits until every memtable is
// flushed.
func (db *DB) Flush() error {
	var msg *C.char
	code := C.shale_flush(db.c, &msg)
	runtime.KeepAlive(db)
	return check(code, msg)
}

// Sync makes every write acknowledged so far durable (it survives a machine
// crash) by syncing the write-ahead log. It does not flush the memtable: no
// table is written (Flush does that), so it costs one fsync of the log. A
// failed sync poisons the database: it and every later write return
// ErrPoisoned until the database is reopened. ErrReadOnly on a read-only
// database.
func (db *DB) Sync() error {
	var msg *C.char
	code := C.shale_sync(db.c, &msg)
	runtime.KeepAlive(db)
	return check(code, msg)
}

// Compact compacts the keys in [start, limit] (nil: open at that end), so
// that overwritten versions and deletions in the range are gone from disk.
func (db *DB) Compact(start, limit []byte) error {
	var msg *C.char
	code := C.shale_compact_range(db.c, ptr(start), C.size_t(len(start)), ptr(limit), C.size_t(len(limit)), &msg)
	runtime.KeepAlive(db)
	return check(code, msg)
}

// Stat returns the database's statistics as text for people (what `shale
// stats` prints: levels, scores, compactions, reads per block kind, caches).
// The format may change.
func (db *DB) Stat() (string, error) {
	var text, msg *C.char
	code := C.shale_stats(db.c, &text, &msg)
	runtime.KeepAlive(db)
	if err := check(code, msg); err != nil {
		return "", err
	}
	defer C.shale_free(unsafe.Pointer(text))
	return C.GoString(text), nil
}

// Metrics are a few of the engine's counters.
type Metrics struct {
	Gets, GetsFound, GetsMemtableHits             uint64
	BlockCacheHits, BlockCacheMisses              uint64
	PhysicalReads, BytesRead                      uint64
	FilterNegatives, FilterPositives              uint64
	BytesWrittenUser, BytesWrittenWAL             uint64
	BytesWrittenTables, WALSyncs                  uint64
	Flushes, Compactions, StallCount, StallMicros uint64
	BackgroundErrors, L0Files                     uint64
	PendingCompactionBytes                        uint64
	BlockCacheUsage, BlockCacheCapacity           uint64
}

// Metrics returns the engine's counters.
func (db *DB) Metrics() (Metrics, error) {
	var m C.shale_metrics_t
	var msg *C.char
	code := C.shale_metrics(db.c, &m, &msg)
	runtime.KeepAlive(db)
	if err := check(code, msg); err != nil {
		return Metrics{}, err
	}
	return Metrics{
		Gets: uint64(m.gets), GetsFound: uint64(m.gets_found), GetsMemtableHits: uint64(m.gets_memtable_hits),
		BlockCacheHits: uint64(m.block_cache_hits), BlockCacheMisses: uint64(m.block_cache_misses),
		PhysicalReads: uint64(m.physical_reads), BytesRead: uint64(m.bytes_read),
		FilterNegatives: uint64(m.filter_negatives), FilterPositives: uint64(m.filter_positives),
		BytesWrittenUser: uint64(m.bytes_written_user), BytesWrittenWAL: uint64(m.bytes_written_wal),
		BytesWrittenTables: uint64(m.bytes_written_tables), WALSyncs: uint64(m.wal_syncs),
		Flushes: uint64(m.flushes), Compactions: uint64(m.compactions),
		StallCount: uint64(m.stall_count), StallMicros: uint64(m.stall_micros),
		BackgroundErrors: uint64(m.background_errors), L0Files: uint64(m.l0_files),
		PendingCompactionBytes: uint64(m.pending_compaction_bytes),
		BlockCacheUsage:        uint64(m.block_cache_usage), BlockCacheCapacity: uint64(m.block_cache_capacity),
	}, nil
}
