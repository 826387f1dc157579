package shale

// The callback of DB.MultiGetEach, called by the C API. A file of its own:
// a cgo file that exports Go functions may only declare C in its preamble.

/*
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

//export shaleGoEachAnswer
func shaleGoEachAnswer(ctx unsafe.Pointer, index C.size_t, value *C.uint8_t, valueLen C.size_t, found C.bool) (goOn C.bool) {
	st := cgo.Handle(uintptr(ctx)).Value().(*eachState)
	defer func() {
		if r := recover(); r != nil {
			st.panicked, st.panicVal = true, r
			goOn = false
		}
	}()
	var v []byte
	if bool(found) {
		v = make([]byte, int(valueLen))
		if valueLen > 0 {
			copy(v, unsafe.Slice((*byte)(unsafe.Pointer(value)), int(valueLen)))
		}
	}
	return C.bool(st.fn(int(index), v))
}
