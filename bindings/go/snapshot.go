package shale

/*
#include "shale.h"
*/
import "C"

import "runtime"

// Snapshot is a consistent read-only view of the database as of the moment
// it was taken. Safe for concurrent use. Release it when done.
type Snapshot struct {
	c  *C.shale_snapshot_t
	db *DB
}

// NewSnapshot takes a snapshot of the current state.
func (db *DB) NewSnapshot() (*Snapshot, error) {
	var c *C.shale_snapshot_t
	var msg *C.char
	code := C.shale_snapshot_create(db.c, &c, &msg)
	runtime.KeepAlive(db)
	if err := check(code, msg); err != nil {
		return nil, err
	}
	s := &Snapshot{c: c, db: db}
	// Frees the handle if it is dropped without Close (a cleanup would
	// free it a second time after an explicit Close).
	runtime.SetFinalizer(s, (*Snapshot).free)
	return s, nil
}

// Get returns a copy of the value of key as of the snapshot, or ErrNotFound.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	if s.c == nil {
		return nil, ErrClosed
	}
	var scratch [getScratch]byte
	var valueLen C.size_t
	var found C.bool
	var msg *C.char
	buf, bufCap := (*C.uint8_t)(&scratch[0]), C.size_t(getScratch)
	var out []byte
	for {
		code := C.shale_snapshot_get_into(s.c, ptr(key), C.size_t(len(key)), buf, bufCap, &valueLen, &found, &msg)
		runtime.KeepAlive(s)
		if err := check(code, msg); err != nil {
			return nil, err
		}
		if !found {
			return nil, ErrNotFound
		}
		if valueLen <= bufCap {
			break
		}
		out = make([]byte, valueLen)
		buf, bufCap = ptr(out), valueLen
	}
	if out == nil {
		out = make([]byte, valueLen)
		copy(out, scratch[:valueLen])
	}
	return out[:valueLen], nil
}

// Has reports whether key existed when the snapshot was taken.
func (s *Snapshot) Has(key []byte) (bool, error) {
	if s.c == nil {
		return false, ErrClosed
	}
	var valueLen C.size_t
	var found C.bool
	var msg *C.char
	code := C.shale_snapshot_get_into(s.c, ptr(key), C.size_t(len(key)), nil, 0, &valueLen, &found, &msg)
	runtime.KeepAlive(s)
	if err := check(code, msg); err != nil {
		return false, err
	}
	return bool(found), nil
}

// NewIterator makes an iterator over the snapshot's state.
func (s *Snapshot) NewIterator(opts *IterOptions) (*Iterator, error) {
	if s.c == nil {
		return nil, ErrClosed
	}
	it, err := newIterator(s.db, s.c, opts)
	runtime.KeepAlive(s)
	return it, err
}

// Release releases the snapshot. Releasing twice is a no-op.
func (s *Snapshot) Release() { s.free() }

func (s *Snapshot) free() {
	if s.c != nil {
		C.shale_snapshot_free(s.c, nil)
		s.c = nil
	}
}
