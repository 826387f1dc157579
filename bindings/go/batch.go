package shale

/*
#include "shale.h"
*/
import "C"

import "runtime"

// Batch is a group of writes (puts, deletes, range deletions) applied
// atomically by Write, in order (a later write of the same key wins). It copies the keys and values given to it.
// Not safe for concurrent use. A batch belongs to no database until written:
// it may be written to any, any number of times.
type Batch struct {
	c *C.shale_batch_t
}

// NewBatch makes an empty batch. Free it with Close (or leave it to the
// garbage collector).
func NewBatch() *Batch {
	var c *C.shale_batch_t
	if code := C.shale_batch_create(&c, nil); code != C.SHALE_OK {
		// Only a NULL out-parameter fails, and this one is not NULL.
		panic("shale: shale_batch_create failed: " + Code(code).String())
	}
	b := &Batch{c: c}
	// Frees the handle if it is dropped without Close (a cleanup would
	// free it a second time after an explicit Close).
	runtime.SetFinalizer(b, (*Batch).free)
	return b
}

// Put adds a put of key -> value.
func (b *Batch) Put(key, value []byte) error {
	var msg *C.char
	code := C.shale_batch_put(b.c, ptr(key), C.size_t(len(key)), ptr(value), C.size_t(len(value)), &msg)
	runtime.KeepAlive(b)
	return check(code, msg)
}

// Delete adds a deletion of key.
func (b *Batch) Delete(key []byte) error {
	var msg *C.char
	code := C.shale_batch_delete(b.c, ptr(key), C.size_t(len(key)), &msg)
	runtime.KeepAlive(b)
	return check(code, msg)
}

// DeleteRange adds a deletion of every key in [start, end), applied in order
// with the batch's other writes: it deletes what the writes before it put, not
// what the writes after it put. start == end adds nothing; start > end is
// ErrInvalidArgument and adds nothing (the batch can still be written).
func (b *Batch) DeleteRange(start, end []byte) error {
	var msg *C.char
	code := C.shale_batch_delete_range(b.c, ptr(start), C.size_t(len(start)), ptr(end), C.size_t(len(end)), &msg)
	runtime.KeepAlive(b)
	return check(code, msg)
}

// Len is the number of operations.
func (b *Batch) Len() int {
	var n C.size_t
	C.shale_batch_count(b.c, &n, nil)
	runtime.KeepAlive(b)
	return int(n)
}

// Size is the size of the batch's encoding in bytes.
func (b *Batch) Size() int {
	var n C.size_t
	C.shale_batch_size(b.c, &n, nil)
	runtime.KeepAlive(b)
	return int(n)
}

// Reset removes every operation.
func (b *Batch) Reset() {
	C.shale_batch_clear(b.c, nil)
	runtime.KeepAlive(b)
}

// Write applies the batch to db atomically, syncing the write-ahead log first
// if sync. The batch is unchanged.
func (b *Batch) Write(db *DB, sync bool) error {
	var msg *C.char
	code := C.shale_write(db.c, b.c, C.bool(sync), &msg)
	runtime.KeepAlive(b)
	runtime.KeepAlive(db)
	return check(code, msg)
}

// Close frees the batch. Closing twice is a no-op.
func (b *Batch) Close() { b.free() }

func (b *Batch) free() {
	if b.c != nil {
		C.shale_batch_free(b.c, nil)
		b.c = nil
	}
}
