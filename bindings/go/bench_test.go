package shale

import (
	"encoding/binary"
	"fmt"
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

// openTable opens a database holding 1,000 keys of 32 bytes with 32-byte
// values in one table (flushed: none in the memtable) and returns the keys.
func openTable(b *testing.B) (*DB, [][]byte) {
	db := openTest(b)
	keys := make([][]byte, 1000)
	value := make([]byte, 32)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("%032d", i*7919%1000))
		if err := db.Put(keys[i], value); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	return db, keys
}

// checkFromTables fails the benchmark if a Get was answered by a memtable.
func checkFromTables(b *testing.B, db *DB) {
	if m, err := db.Metrics(); err != nil || m.GetsMemtableHits != 0 {
		b.Fatalf("memtable hits %d, %v: not a read from a table", m.GetsMemtableHits, err)
	}
}

// BenchmarkGetTable reads one key whose 32-byte value lives in a table (its
// block in the block cache after the first read): the C side copies the
// value straight from the cached block into Get's stack buffer.
func BenchmarkGetTable(b *testing.B) {
	db, keys := openTable(b)
	key := keys[500]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.Get(key); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	checkFromTables(b, db)
}

// BenchmarkMultiGetTable reads 100 keys whose values live in a table with one
// MultiGet per op (ns/key: the time per key).
func BenchmarkMultiGetTable(b *testing.B) {
	db, keys := openTable(b)
	batch := keys[:100]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.MultiGet(batch); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/key")
	checkFromTables(b, db)
}

// BenchmarkGetTable100 reads the 100 keys of BenchmarkMultiGetTable with one
// Get each per op (ns/key: the time per key), to set MultiGet against.
func BenchmarkGetTable100(b *testing.B) {
	db, keys := openTable(b)
	batch := keys[:100]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, k := range batch {
			if _, err := db.Get(k); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/key")
	checkFromTables(b, db)
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
