package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// request runs one request in process, as the harness binary would, and
// returns the reply's JSON.
func request(t *testing.T, req string) ([]byte, error) {
	t.Helper()
	reply, err := serve(strings.NewReader(req))
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(reply)
	if err != nil {
		t.Fatal(err)
	}
	return data, nil
}

func writeIndices(t *testing.T, path string, indices []uint64) {
	t.Helper()
	data := make([]byte, 8*len(indices))
	for i, x := range indices {
		binary.LittleEndian.PutUint64(data[8*i:], x)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadInspectRead(t *testing.T) {
	tmp := t.TempDir()
	db := filepath.Join(tmp, "db")
	const keys = 3000
	dataset := func(seed, valueSize int) string {
		return fmt.Sprintf(`{"keys":%d,"scheme":"hash","value_size":%d,"seed":%d}`, keys, valueSize, seed)
	}
	target := fmt.Sprintf(`"dir":%q,"config":"geth","dataset":%s`, db, dataset(0, 110))

	data, err := request(t, `{"protocol":1,"op":"load",`+target+`,"threads":2,"batch":500}`)
	if err != nil {
		t.Fatal(err)
	}
	var lr LoadReply
	if err := json.Unmarshal(data, &lr); err != nil {
		t.Fatal(err)
	}
	c := lr.Shape.Composition
	if lr.Engine != "pebble v1.1.5 (geth)" || lr.UserBytes != keys*(32+110) || c.Entries != keys ||
		c.RawKeyBytes != keys*32 || c.RawValueBytes != keys*110 || lr.TableBytesWritten == 0 ||
		lr.WALBytes == 0 || lr.WriteAmp <= 0 || len(lr.Shape.Levels) != 7 || c.DataBytes == 0 ||
		c.FilterBytes == 0 || c.IndexBytes < c.TopLevelIndexBytes || c.TopLevelIndexBytes == 0 {
		t.Errorf("load reply %s", data)
	}
	if _, err := request(t, `{"protocol":1,"op":"load",`+target+`,"threads":2,"batch":500}`); err == nil {
		t.Error("load into a non-empty directory succeeded")
	}

	data, err = request(t, `{"protocol":1,"op":"inspect",`+target+`}`)
	if err != nil {
		t.Fatal(err)
	}
	var ir InspectReply
	if err := json.Unmarshal(data, &ir); err != nil || ir.Shape.Composition != c {
		t.Errorf("inspect reply %s, load composition %+v (%v)", data, c, err)
	}
	for _, wrong := range []string{dataset(1, 110), dataset(0, 100)} {
		bad := fmt.Sprintf(`{"protocol":1,"op":"inspect","dir":%q,"config":"geth","dataset":%s}`, db, wrong)
		if _, err := request(t, bad); err == nil || !strings.Contains(err.Error(), "does not hold the dataset") {
			t.Errorf("inspect of dataset %s: %v", wrong, err)
		}
	}
	more := strings.Replace(target, `"keys":3000`, `"keys":2999`, 1)
	if _, err := request(t, `{"protocol":1,"op":"inspect",`+more+`}`); err == nil {
		t.Error("inspect with one key too few succeeded")
	}

	// Reads: a cold read (empty warm-up) of present and missing keys.
	warm, reads := filepath.Join(tmp, "warm.bin"), filepath.Join(tmp, "reads.bin")
	writeIndices(t, warm, nil)
	var indices []uint64
	for i := uint64(0); i < 1000; i++ {
		indices = append(indices, (i*7919)%keys)
	}
	indices = append(indices, keys, keys+1, 1<<40, ^uint64(0), keys*2)
	writeIndices(t, reads, indices)
	readReq := func(cache int) string {
		return fmt.Sprintf(`{"protocol":1,"op":"read",%s,"cache_bytes":%d,"threads":3,"direct_io":true,"warmup_file":%q,"reads_file":%q}`,
			target, cache, warm, reads)
	}
	data, err = request(t, readReq(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	var rr ReadReply
	if err := json.Unmarshal(data, &rr); err != nil {
		t.Fatal(err)
	}
	if rr.Gets != 1005 || rr.Found != 1000 || rr.DirectIO || rr.Blocks.Data.PhysicalReads == nil ||
		*rr.Blocks.Data.PhysicalReads == 0 || rr.Blocks.Data.CacheHits != nil || rr.ReadRequests == 0 ||
		rr.TableOpenReads == nil || *rr.TableOpenReads == 0 || rr.TableCache == nil || rr.TableCache.Misses == 0 ||
		rr.RSSBytes == nil || rr.Latency.P50 <= 0 || rr.Latency.P999 < rr.Latency.P50 {
		t.Errorf("cold read reply %s", data)
	}
	// Every read of a table file is one of the kinds or a table-open read.
	b := rr.Blocks
	sum := *b.Data.PhysicalReads + *b.Index.PhysicalReads + *b.TopIndex.PhysicalReads + *b.Filter.PhysicalReads + *rr.TableOpenReads
	if sum != rr.ReadRequests {
		t.Errorf("classified reads %d != read requests %d: %s", sum, rr.ReadRequests, data)
	}

	// Warmed with the same Gets and a cache that holds the database, the
	// measured Gets read nothing.
	writeIndices(t, warm, indices)
	data, err = request(t, readReq(64<<20))
	if err != nil {
		t.Fatal(err)
	}
	rr = ReadReply{}
	if err := json.Unmarshal(data, &rr); err != nil {
		t.Fatal(err)
	}
	if rr.Found != 1000 || rr.ReadRequests != 0 || *rr.Blocks.Data.CacheMisses != 0 || rr.TableCache.Misses != 0 {
		t.Errorf("warm read reply %s", data)
	}

	// A read of another dataset fails.
	wrongSeed := strings.Replace(readReq(1<<20), `"seed":0`, `"seed":5`, 1)
	if _, err := request(t, wrongSeed); err == nil || !strings.Contains(err.Error(), "not the dataset's") {
		t.Errorf("read with another seed: %v", err)
	}
}
