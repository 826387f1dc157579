package shale

/*
#include <stdint.h>
#include "shale.h"

// Defined in Go (each_export.go).
extern bool shaleGoEachAnswer(void *ctx, size_t index, const uint8_t *value, size_t value_len, bool found);

// shale_multi_get_each with the Go callback; ctx is a cgo.Handle.
static shale_code_t shale_go_multi_get_each(shale_db_t *db, const uint8_t *const *keys,
                                            const size_t *key_lens, size_t n, size_t depth,
                                            uintptr_t ctx, char **msg) {
	return shale_multi_get_each(db, keys, key_lens, n, depth, shaleGoEachAnswer, (void *)ctx, msg);
}
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
)

// eachState is what a MultiGetEach call's callbacks share.
type eachState struct {
	fn func(i int, value []byte) bool
	// A panic of fn, recovered in the callback (a panic must not unwind
	// through C frames) and raised again once the C call has returned.
	panicked bool
	panicVal any
}

// MultiGetEach reads every key with up to readsInFlight device reads in
// flight from this goroutine's thread (at most 64 are kept) and calls fn
// with each key's index in keys and its value as soon as that value is known:
// in the order the answers come, not the keys' order, so that a key whose
// block is not cached waits for its read while the next keys start. value is
// a copy fn may keep, nil for a missing key (an empty value is an empty,
// non-nil slice). All keys are read in one state of the database. fn
// returning false ends the call (with a nil error); the first error ends it
// too. fn may read the database (Get, MultiGet); Close from inside it fails.
// A panic of fn ends the call and is raised again by MultiGetEach.
// readsInFlight must be at least 1. On a file system without batched reads
// the keys go in groups of readsInFlight, each answered in order.
func (db *DB) MultiGetEach(keys [][]byte, readsInFlight int, fn func(i int, value []byte) bool) error {
	if readsInFlight < 0 {
		readsInFlight = 0 // refused by the C side with its message
	}
	st := &eachState{fn: fn}
	h := cgo.NewHandle(st)
	defer h.Delete()
	var pinner runtime.Pinner
	defer pinner.Unpin()
	n := len(keys)
	var keyPtrs []*C.uint8_t
	var keyLens []C.size_t
	var kp **C.uint8_t
	var kl *C.size_t
	if n > 0 {
		keyPtrs = make([]*C.uint8_t, n)
		keyLens = make([]C.size_t, n)
		for i, k := range keys {
			if len(k) > 0 {
				pinner.Pin(&k[0])
				keyPtrs[i] = ptr(k)
			}
			keyLens[i] = C.size_t(len(k))
		}
		kp, kl = &keyPtrs[0], &keyLens[0]
	}
	var msg *C.char
	code := C.shale_go_multi_get_each(db.c, kp, kl, C.size_t(n), C.size_t(readsInFlight), C.uintptr_t(h), &msg)
	runtime.KeepAlive(db)
	runtime.KeepAlive(keys)
	err := check(code, msg)
	if st.panicked {
		panic(st.panicVal)
	}
	return err
}
