package shale

/*
#include "shale.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// IterOptions bound an iterator. Nil fields are unbounded.
type IterOptions struct {
	// LowerBound is the first key returned (inclusive).
	LowerBound []byte
	// UpperBound is the key iteration stops before (exclusive).
	UpperBound []byte
	// Prefix keeps the iterator to keys starting with it (with the bounds).
	Prefix []byte
}

// Iterator walks the keys and values of a database or a snapshot, in key
// order, in both directions, as of the moment it was made. It is unpositioned
// until First, Last, Seek or SeekForPrev. Not safe for concurrent use. Close
// it when done.
type Iterator struct {
	c *C.shale_iterator_t
	// db keeps the database reachable while the iterator is: its cleanup
	// would close it.
	db    *DB
	valid bool
	key   []byte
	value []byte
	err   error
}

// NewIterator makes an iterator over the latest state.
func (db *DB) NewIterator(opts *IterOptions) (*Iterator, error) {
	it, err := newIterator(db, nil, opts)
	runtime.KeepAlive(db)
	return it, err
}

func newIterator(db *DB, snap *C.shale_snapshot_t, opts *IterOptions) (*Iterator, error) {
	var ro C.shale_read_options_t
	ro.snapshot = snap
	var pinned runtime.Pinner
	defer pinned.Unpin()
	bound := func(b []byte, p **C.uint8_t, n *C.size_t) {
		if b == nil {
			return
		}
		if len(b) == 0 {
			// An empty bound is a bound: a non-NULL pointer of length 0.
			b = []byte{0}[:0:1]
		}
		pinned.Pin(unsafe.SliceData(b))
		*p, *n = ptr(b), C.size_t(len(b))
	}
	if opts != nil {
		bound(opts.LowerBound, &ro.lower_bound, &ro.lower_bound_len)
		bound(opts.UpperBound, &ro.upper_bound, &ro.upper_bound_len)
		bound(opts.Prefix, &ro.prefix, &ro.prefix_len)
	}
	var c *C.shale_iterator_t
	var msg *C.char
	if err := check(C.shale_iterator_create(db.c, &ro, &c, &msg), msg); err != nil {
		return nil, err
	}
	it := &Iterator{c: c, db: db}
	// Frees the handle if it is dropped without Close (a cleanup would
	// free it a second time after an explicit Close).
	runtime.SetFinalizer(it, (*Iterator).free)
	return it, nil
}

// apply records the entry a move landed on, copying its key and value into
// the iterator's own buffers.
func (it *Iterator) apply(code C.shale_code_t, e *C.shale_entry_t, msg *C.char) bool {
	if err := check(code, msg); err != nil {
		it.valid, it.err = false, err
		return false
	}
	it.valid = bool(e.valid)
	if it.valid {
		it.key = append(it.key[:0], unsafe.Slice((*byte)(e.key), int(e.key_len))...)
		it.value = append(it.value[:0], unsafe.Slice((*byte)(e.value), int(e.value_len))...)
	}
	return it.valid
}

func (it *Iterator) closedErr() bool {
	if it.c == nil {
		it.valid, it.err = false, ErrClosed
		return true
	}
	return false
}

// First moves to the first key; it reports whether the iterator is valid.
func (it *Iterator) First() bool {
	if it.closedErr() {
		return false
	}
	var e C.shale_entry_t
	var msg *C.char
	return it.apply(C.shale_iterator_seek_to_first(it.c, &e, &msg), &e, msg)
}

// Last moves to the last key.
func (it *Iterator) Last() bool {
	if it.closedErr() {
		return false
	}
	var e C.shale_entry_t
	var msg *C.char
	return it.apply(C.shale_iterator_seek_to_last(it.c, &e, &msg), &e, msg)
}

// Seek moves to the first key >= key.
func (it *Iterator) Seek(key []byte) bool {
	if it.closedErr() {
		return false
	}
	var e C.shale_entry_t
	var msg *C.char
	return it.apply(C.shale_iterator_seek(it.c, ptr(key), C.size_t(len(key)), &e, &msg), &e, msg)
}

// SeekForPrev moves to the last key <= key.
func (it *Iterator) SeekForPrev(key []byte) bool {
	if it.closedErr() {
		return false
	}
	var e C.shale_entry_t
	var msg *C.char
	return it.apply(C.shale_iterator_seek_for_prev(it.c, ptr(key), C.size_t(len(key)), &e, &msg), &e, msg)
}

// Next moves to the next key.
func (it *Iterator) Next() bool {
	if it.closedErr() {
		return false
	}
	var e C.shale_entry_t
	var msg *C.char
	return it.apply(C.shale_iterator_next(it.c, &e, &msg), &e, msg)
}

// Prev moves to the previous key.
func (it *Iterator) Prev() bool {
	if it.closedErr() {
		return false
	}
	var e C.shale_entry_t
	var msg *C.char
	return it.apply(C.shale_iterator_prev(it.c, &e, &msg), &e, msg)
}

// Valid reports whether the iterator is on a key.
func (it *Iterator) Valid() bool { return it.valid }

// Key is the current key (nil when not valid); it changes with the next move.
func (it *Iterator) Key() []byte {
	if !it.valid {
		return nil
	}
	return it.key
}

// Value is the current value (nil when not valid); it changes with the next
// move.
func (it *Iterator) Value() []byte {
	if !it.valid {
		return nil
	}
	return it.value
}

// Error is the error that ended the iteration (ErrClosed after the database
// or the iterator closed), or nil: the end is not an error.
func (it *Iterator) Error() error { return it.err }

// Close frees the iterator. Closing twice is a no-op.
func (it *Iterator) Close() { it.free() }

func (it *Iterator) free() {
	if it.c != nil {
		C.shale_iterator_free(it.c, nil)
		it.c = nil
		it.valid = false
	}
}
