package shale

/*
#include "shale.h"
*/
import "C"

// cgoNoop makes one cgo call that does nothing but look up a static string,
// for BenchmarkCgoCall.
func cgoNoop() { C.shale_code_name(0) }
