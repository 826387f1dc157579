// Package ethdb adapts shale to go-ethereum's ethdb.KeyValueStore (v1.17.10),
// so that geth can keep its key-value data in shale:
//
//	db, err := ethdb.New(path, ethdb.Cache(512), ethdb.Handles(1000))
//
// It follows geth's own ethdb/pebble backend: a missing key is ErrNotFound,
// every call after Close returns ErrClosed (iterators too: Next is false and
// Error is ErrClosed), writes are not synced unless asked (SyncKeyValue makes
// them durable), a batch's Replay includes its range deletions, and
// NewIterator(prefix, start) walks the keys with that prefix from
// prefix+start, through the engine's bounds.
package ethdb

import (
	"encoding/binary"
	"errors"
	"fmt"

	gethdb "github.com/ethereum/go-ethereum/ethdb"

	shale "shale.dev/bindings/go"
)

// Errors geth sees.
var (
	// ErrNotFound is Get's error for a missing key.
	ErrNotFound = shale.ErrNotFound
	// ErrClosed is returned by every call after Close.
	ErrClosed = shale.ErrClosed
)

// Database is a shale database as an ethdb.KeyValueStore.
type Database struct {
	db   *shale.DB
	path string
}

var _ gethdb.KeyValueStore = (*Database)(nil)

type config struct {
	cacheMB  int
	handles  int
	readOnly bool
	sync     bool
}

// Option configures New.
type Option func(*config)

// Cache sets the memory budget in MiB the way geth's pebble backend splits
// it: a block cache of that size and a memtable of an eighth of it (geth
// passes its --cache share for the database; minimum 16).
func Cache(mb int) Option { return func(c *config) { c.cacheMB = mb } }

// Handles sets the table files kept open (minimum 16).
func Handles(n int) Option { return func(c *config) { c.handles = n } }

// ReadOnly opens the database read-only: writes fail.
func ReadOnly() Option { return func(c *config) { c.readOnly = true } }

// Sync makes every write sync the write-ahead log before returning.
func Sync() Option { return func(c *config) { c.sync = true } }

// New opens (or creates) the shale database in the directory path.
func New(path string, options ...Option) (*Database, error) {
	cfg := config{cacheMB: 16, handles: 16}
	for _, o := range options {
		o(&cfg)
	}
	cfg.cacheMB = max(cfg.cacheMB, 16)
	cfg.handles = max(cfg.handles, 16)
	opts := &shale.Options{
		BlockCacheBytes: uint64(cfg.cacheMB) << 20,
		WriteBufferSize: cfg.cacheMB << 20 / 8,
		MaxOpenFiles:    cfg.handles,
		Sync:            cfg.sync,
	}
	var db *shale.DB
	var err error
	if cfg.readOnly {
		db, err = shale.OpenReadOnly(path, opts)
	} else {
		db, err = shale.Open(path, opts)
	}
	if err != nil {
		return nil, err
	}
	return &Database{db: db, path: path}, nil
}

// Path is the database directory.
func (d *Database) Path() string { return d.path }

// Close closes the database; closing twice returns nil.
func (d *Database) Close() error { return d.db.Close() }

// Has reports whether key exists.
func (d *Database) Has(key []byte) (bool, error) { return d.db.Has(key) }

// Get returns a copy of key's value, or ErrNotFound.
func (d *Database) Get(key []byte) ([]byte, error) { return d.db.Get(key) }

// Put sets key to value.
func (d *Database) Put(key []byte, value []byte) error { return d.db.Put(key, value) }

// Delete deletes key.
func (d *Database) Delete(key []byte) error { return d.db.Delete(key) }

// DeleteRange deletes the keys in [start, end) in one small write. A nil start
// is the smallest key (the empty key); a nil end is gethdb.MaximumKey, as in
// geth's pebble backend: every key geth writes is below it. start > end is an
// error (shale.ErrInvalidArgument) and deletes nothing.
func (d *Database) DeleteRange(start, end []byte) error {
	if end == nil {
		end = gethdb.MaximumKey
	}
	return d.db.DeleteRange(start, end)
}

// Stat is the engine's text summary.
func (d *Database) Stat() (string, error) { return d.db.Stat() }

// SyncKeyValue makes every write so far durable by syncing the write-ahead
// log (shale.DB.Sync), without flushing the memtable, as geth's pebble
// backend does with a synced empty log entry: one fsync, no table written.
func (d *Database) SyncKeyValue() error { return d.db.Sync() }

// Compact compacts [start, limit] (nil: open at that end).
func (d *Database) Compact(start []byte, limit []byte) error { return d.db.Compact(start, limit) }

// NewBatch makes a batch written to this database by its Write.
func (d *Database) NewBatch() gethdb.Batch { return d.NewBatchWithSize(0) }

// NewBatchWithSize makes a batch whose replay record starts with room for
// size bytes.
func (d *Database) NewBatchWithSize(size int) gethdb.Batch {
	return &batch{db: d, b: shale.NewBatch(), record: make([]byte, 0, max(size, 0))}
}

// NewIterator walks the keys starting with prefix, from prefix+start.
func (d *Database) NewIterator(prefix []byte, start []byte) gethdb.Iterator {
	opts := &shale.IterOptions{Prefix: prefix}
	if len(start) > 0 {
		opts.LowerBound = append(append(make([]byte, 0, len(prefix)+len(start)), prefix...), start...)
	}
	it, err := d.db.NewIterator(opts)
	if err != nil {
		return &iterator{err: err}
	}
	return &iterator{it: it}
}

// Operation kinds of a batch's replay record.
const (
	opPut byte = iota
	opDelete
	opDeleteRange
)

// batch is a shale batch plus a record of its operations for Replay (the
// engine's batch encoding is its own).
type batch struct {
	db     *Database
	b      *shale.Batch
	record []byte
	size   int
}

func (b *batch) add(kind byte, key, value []byte) {
	b.record = append(b.record, kind)
	b.record = binary.AppendUvarint(b.record, uint64(len(key)))
	b.record = append(b.record, key...)
	b.record = binary.AppendUvarint(b.record, uint64(len(value)))
	b.record = append(b.record, value...)
}

// Put adds a put.
func (b *batch) Put(key, value []byte) error {
	if err := b.b.Put(key, value); err != nil {
		return err
	}
	b.add(opPut, key, value)
	b.size += len(key) + len(value)
	return nil
}

// Delete adds a deletion.
func (b *batch) Delete(key []byte) error {
	if err := b.b.Delete(key); err != nil {
		return err
	}
	b.add(opDelete, key, nil)
	b.size += len(key)
	return nil
}

// DeleteRange adds a deletion of [start, end), with the bounds of
// Database.DeleteRange (nil end: gethdb.MaximumKey). start > end is an error
// and adds nothing, neither to the batch nor to its replay record.
func (b *batch) DeleteRange(start, end []byte) error {
	if end == nil {
		end = gethdb.MaximumKey
	}
	if err := b.b.DeleteRange(start, end); err != nil {
		return err
	}
	b.add(opDeleteRange, start, end)
	b.size += len(start) + len(end)
	return nil
}

// ValueSize is the size of the keys and values queued.
func (b *batch) ValueSize() int { return b.size }

// Write applies the batch (ErrClosed after the database's Close).
func (b *batch) Write() error { return b.b.Write(b.db.db, false) }

// Reset empties the batch.
func (b *batch) Reset() {
	b.b.Reset()
	b.record = b.record[:0]
	b.size = 0
}

// Close frees the batch.
func (b *batch) Close() { b.b.Close() }

// Replay applies the batch's operations, in order, to w: range deletions
// through w's DeleteRange.
func (b *batch) Replay(w gethdb.KeyValueWriter) error {
	rec := b.record
	next := func() ([]byte, error) {
		n, k := binary.Uvarint(rec)
		if k <= 0 || uint64(len(rec)-k) < n {
			return nil, errors.New("shale/ethdb: damaged batch record")
		}
		field := rec[k : k+int(n)]
		rec = rec[k+int(n):]
		return field, nil
	}
	for len(rec) > 0 {
		kind := rec[0]
		rec = rec[1:]
		key, err := next()
		if err != nil {
			return err
		}
		value, err := next()
		if err != nil {
			return err
		}
		switch kind {
		case opPut:
			err = w.Put(key, value)
		case opDelete:
			err = w.Delete(key)
		case opDeleteRange:
			rd, ok := w.(gethdb.KeyValueRangeDeleter)
			if !ok {
				return errors.New("shale/ethdb: the replay target does not implement DeleteRange")
			}
			err = rd.DeleteRange(key, value)
		default:
			return fmt.Errorf("shale/ethdb: unknown batch operation %d", kind)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// iterator adapts shale's iterator to ethdb.Iterator.
type iterator struct {
	it      *shale.Iterator
	started bool
	err     error
}

// Next moves to the next key (the first on the first call).
func (i *iterator) Next() bool {
	if i.it == nil {
		return false
	}
	if !i.started {
		i.started = true
		return i.it.First()
	}
	return i.it.Next()
}

// Error is the error that ended the iteration, or nil.
func (i *iterator) Error() error {
	if i.err != nil {
		return i.err
	}
	if i.it == nil {
		return nil
	}
	return i.it.Error()
}

// Key is the current key, nil when done.
func (i *iterator) Key() []byte {
	if i.it == nil {
		return nil
	}
	return i.it.Key()
}

// Value is the current value, nil when done.
func (i *iterator) Value() []byte {
	if i.it == nil {
		return nil
	}
	return i.it.Value()
}

// Release frees the iterator; it may be called more than once.
func (i *iterator) Release() {
	if i.it != nil {
		i.it.Close()
	}
}
