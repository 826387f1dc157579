// Package gethbench runs go-ethereum's ethdb/dbtest.BenchDatabaseSuite on
// shale (through the ethdb adapter) and on geth's own ethdb/pebble and
// ethdb/leveldb backends, with the same cache and file-handle budgets.
// scripts/geth-bench.sh runs it and prints the ratios; it is a module of its
// own so that the bindings' module does not depend on Pebble and goleveldb.
package gethbench

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	gethdb "github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/ethdb/dbtest"
	"github.com/ethereum/go-ethereum/ethdb/leveldb"
	"github.com/ethereum/go-ethereum/ethdb/pebble"

	shaleethdb "shale.dev/bindings/go/ethdb"
)

// The budgets every engine gets (GETH_BENCH_CACHE_MB, GETH_BENCH_HANDLES).
func budgets() (cacheMB, handles int) {
	cacheMB, handles = 64, 256
	if v, err := strconv.Atoi(os.Getenv("GETH_BENCH_CACHE_MB")); err == nil {
		cacheMB = v
	}
	if v, err := strconv.Atoi(os.Getenv("GETH_BENCH_HANDLES")); err == nil {
		handles = v
	}
	return cacheMB, handles
}

// removing deletes the database's directory when it is closed, so that the
// suite's many databases do not pile up on disk.
type removing struct {
	gethdb.KeyValueStore
	dir string
}

func (r removing) Close() error {
	err := r.KeyValueStore.Close()
	os.RemoveAll(r.dir)
	return err
}

func suite(b *testing.B, open func(dir string, cacheMB, handles int) (gethdb.KeyValueStore, error)) {
	cacheMB, handles := budgets()
	root := b.TempDir()
	n := 0
	dbtest.BenchDatabaseSuite(b, func() gethdb.KeyValueStore {
		n++
		dir := filepath.Join(root, strconv.Itoa(n))
		db, err := open(dir, cacheMB, handles)
		if err != nil {
			b.Fatal(err)
		}
		return removing{db, dir}
	})
}

func BenchmarkShale(b *testing.B) {
	suite(b, func(dir string, cacheMB, handles int) (gethdb.KeyValueStore, error) {
		return shaleethdb.New(dir, shaleethdb.Cache(cacheMB), shaleethdb.Handles(handles))
	})
}

func BenchmarkPebble(b *testing.B) {
	suite(b, func(dir string, cacheMB, handles int) (gethdb.KeyValueStore, error) {
		return pebble.New(dir, cacheMB, handles, "", false)
	})
}

func BenchmarkLevelDB(b *testing.B) {
	suite(b, func(dir string, cacheMB, handles int) (gethdb.KeyValueStore, error) {
		return leveldb.New(dir, cacheMB, handles, "", false)
	})
}
