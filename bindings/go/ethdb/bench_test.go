package ethdb

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkDeleteRange10k is geth's BenchDatabaseSuite DeleteRange10k (10,000
// keys written, then one DeleteRange over all of them) with the range
// deletion timed alone: the suite's figure also holds the database's Close
// (a sync of the log, the background threads stopped), reported here as
// close-ns.
func BenchmarkDeleteRange10k(b *testing.B) {
	var closing time.Duration
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		db := newDB(b)
		for k := 0; k < 10000; k++ {
			if err := db.Put([]byte(strconv.Itoa(k)), nil); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if err := db.DeleteRange([]byte("0"), []byte("999999999")); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		start := time.Now()
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		closing += time.Since(start)
	}
	b.ReportMetric(float64(closing.Nanoseconds())/float64(b.N), "close-ns")
}
