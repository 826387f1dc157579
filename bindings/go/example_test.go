package shale_test

import (
	"errors"
	"fmt"
	"os"

	shale "shale.dev/bindings/go"
)

// The README's Go example (scripts/capi.sh checks that it is this one).
func Example() {
	dir, _ := os.MkdirTemp("", "shale-example")
	defer os.RemoveAll(dir)
	db, err := shale.Open(dir, nil)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	db.Put([]byte("alice"), []byte("10"))
	db.Put([]byte("bob"), []byte("20"))
	if _, err := db.Get([]byte("carol")); errors.Is(err, shale.ErrNotFound) {
		fmt.Println("carol: not found")
	}
	it, _ := db.NewIterator(&shale.IterOptions{Prefix: []byte("b")})
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s = %s\n", it.Key(), it.Value())
	}
	// Output:
	// carol: not found
	// bob = 20
}

// Deleting a range of keys: [start, end), one small write whatever it holds.
func ExampleDB_DeleteRange() {
	dir, _ := os.MkdirTemp("", "shale-example")
	defer os.RemoveAll(dir)
	db, err := shale.Open(dir, nil)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	for _, k := range []string{"log-1", "log-2", "log-3", "user-1"} {
		db.Put([]byte(k), []byte("x"))
	}
	if err := db.DeleteRange([]byte("log-"), []byte("log-3")); err != nil {
		panic(err)
	}
	it, _ := db.NewIterator(nil)
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Println(string(it.Key()))
	}
	// A range whose start is above its end is refused.
	err = db.DeleteRange([]byte("z"), []byte("a"))
	fmt.Println(errors.Is(err, shale.ErrInvalidArgument))
	// Output:
	// log-3
	// user-1
	// true
}
