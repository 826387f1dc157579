package shale

import (
	"encoding/binary"
	"testing"
)

// The cost of the cgo boundary: one call per operation, and a Get allocates
// only the value it returns (go test -bench . -benchmem; docs/benchmarks.md).

// BenchmarkGetCached reads one key that sits in the memtable.
func BenchmarkGetCached(b *testing.B) {
	db := openTest(b)
	key, value := []byte("0123456789abcdef0123456789abcdef"), make([]byte, 32)
	if err := db.Put(key, value); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.Get(key); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHasCached checks one key that sits in the memtable.
func BenchmarkHasCached(b *testing.B) {
	db := openTest(b)
	key := []byte("0123456789abcdef0123456789abcdef")
	if err := db.Put(key, make([]byte, 32)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.Has(key); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPut writes 32-byte keys and values, not synced.
func BenchmarkPut(b *testing.B) {
	db, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	key, value := make([]byte, 32), make([]byte, 32)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		binary.BigEndian.PutUint64(key, uint64(i))
		if err := db.Put(key, value); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCgoCall is the boundary alone: a cgo call into the library that
// does no work (the code name lookup), the floor under every operation above.
func BenchmarkCgoCall(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		cgoNoop()
	}
}
