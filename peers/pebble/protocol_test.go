package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestRequestsRoundTrip(t *testing.T) {
	ds := &DatasetSpec{Keys: 1000, Scheme: "hash", ValueSize: 110, Seed: 0}
	requests := []Request{
		{Protocol: 1, Op: "info"},
		{Protocol: 1, Op: "inspect", Dir: "/data/db", Dataset: ds, Config: "geth"},
		{Protocol: 1, Op: "load", Dir: "/data/db", Dataset: ds, Config: "geth", Threads: 2, Batch: 1000},
		{Protocol: 1, Op: "read", Dir: "/data/db", Dataset: ds, Config: "geth", CacheBytes: 8 << 20,
			Threads: 2, WarmupFile: "/tmp/w", ReadsFile: "/tmp/r", DirectIO: false},
	}
	for _, r := range requests {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseRequest(data)
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if !reflect.DeepEqual(*back, r) {
			t.Errorf("%s decoded as %+v", data, *back)
		}
	}
	// Only the op's fields are written.
	info, _ := json.Marshal(requests[0])
	if string(info) != `{"op":"info","protocol":1}` {
		t.Errorf("info request encodes as %s", info)
	}
}

// The documented examples of docs/harness-protocol.md and protocol.rs.
func TestDocumentedRequestsParse(t *testing.T) {
	docs := []string{
		`{"protocol": 1, "op": "info"}`,
		`{"protocol": 1, "op": "load", "dir": "/abs/db", "config": "geth",
		 "dataset": {"keys": 2000000, "scheme": "hash", "value_size": 110, "seed": 0},
		 "threads": 2, "batch": 1000}`,
		`{"protocol": 1, "op": "inspect", "dir": "/abs/db", "config": "geth",
		 "dataset": {"keys": 5, "scheme": "path", "value_size": 110, "seed": 7}}`,
		`{"protocol": 1, "op": "read", "dir": "/abs/db", "config": "geth",
		 "dataset": {"keys": 5, "scheme": "hash", "value_size": 110, "seed": 0},
		 "cache_bytes": 8388608, "threads": 2, "direct_io": true,
		 "warmup_file": "/abs/warmup.bin", "reads_file": "/abs/reads.bin"}`,
		`{"protocol":1,"op":"read","dir":"/d","dataset":{"keys":5,"scheme":"hash",
		 "value_size":110,"seed":0},"config":"default","cache_bytes":4096,"threads":1,
		 "warmup_file":"/w","reads_file":"/r","direct_io":false}`,
	}
	for _, d := range docs {
		if _, err := ParseRequest([]byte(d)); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	r, _ := ParseRequest([]byte(docs[3]))
	if r.CacheBytes != 8388608 || !r.DirectIO || r.Dataset.Keys != 5 || r.ReadsFile != "/abs/reads.bin" {
		t.Errorf("read request decoded as %+v", r)
	}
}

func TestBadRequestsAreRefused(t *testing.T) {
	bad := map[string]string{
		`{"protocol": 2, "op": "info"}`: "protocol",
		`{"op": "info"}`:                "protocol",
		`{"protocol": 1, "op": "drop"}`: "unknown op",
		`{"protocol": 1, "op": "inspect", "dir": "/d", "config": "geth"}`: "dataset",
		`{"protocol": 1, "op": "load", "dir": "/d", "config": "geth", "threads": 1, "batch": 1,
		  "dataset": {"keys": 5, "scheme": "hash", "value_size": 110}}`: "seed",
		`[1]`: "JSON object",
	}
	for req, want := range bad {
		_, err := ParseRequest([]byte(req))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one about %q", req, err, want)
		}
	}
	// Unknown config and scheme are refused by the handler.
	for req, want := range map[string]string{
		`{"protocol":1,"op":"inspect","dir":"/nonexistent","config":"default",
		  "dataset":{"keys":5,"scheme":"hash","value_size":110,"seed":0}}`: "unknown config",
		`{"protocol":1,"op":"inspect","dir":"/nonexistent","config":"geth",
		  "dataset":{"keys":5,"scheme":"trie","value_size":110,"seed":0}}`: "unknown key scheme",
		// Pebble cannot trace its block cache: a read asking for a trace fails.
		`{"protocol":1,"op":"read","dir":"/nonexistent","config":"geth",
		  "dataset":{"keys":5,"scheme":"hash","value_size":110,"seed":0},
		  "cache_bytes":1048576,"threads":1,"warmup_file":"/nonexistent/w","reads_file":"/nonexistent/r",
		  "direct_io":false,"trace":"/tmp/read.trc"}`: "cannot record a block-access trace",
	} {
		_, err := serve(strings.NewReader(req))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one about %q", req, err, want)
		}
	}
}

func TestRepliesEncodeUnknownCountersAsNull(t *testing.T) {
	reply := ReadReply{Engine: "pebble v1.1.5 (geth)", Gets: 10,
		Blocks: BlockCounts{Data: KindCounts{CacheMisses: u64(9), PhysicalReads: u64(9)}}}
	data, err := json.Marshal(reply)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"cache_hits":null`, `"table_open_reads":null`, `"table_cache":null`,
		`"device_read_bytes":null`, `"rss_bytes":null`, `"p999_us":0`, `"data":{"cache_hits":null,"cache_misses":9,"physical_reads":9}`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("%s lacks %s", data, want)
		}
	}
	var back ReadReply
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, reply) {
		t.Errorf("read reply round trip: %v, %+v", err, back)
	}
	load := LoadReply{Engine: "e", Shape: DBShape{Levels: []LevelShape{{Level: 6, Files: 3, Bytes: 9}}}}
	data, _ = json.Marshal(load)
	var lback LoadReply
	if err := json.Unmarshal(data, &lback); err != nil || !reflect.DeepEqual(lback, load) {
		t.Errorf("load reply round trip: %v, %+v", err, lback)
	}
	if !strings.Contains(string(data), `"filter_bytes_except_last_level":0`) {
		t.Errorf("load reply %s lacks the composition's fields", data)
	}
}

func TestThreadSlicesAreContiguous(t *testing.T) {
	var got [][2]int
	for th := 0; th < 3; th++ {
		a, b := threadSlice(10, 3, th)
		got = append(got, [2]int{a, b})
	}
	if !reflect.DeepEqual(got, [][2]int{{0, 4}, {4, 7}, {7, 10}}) {
		t.Errorf("slices %v", got)
	}
	if a, b := threadSlice(2, 4, 3); a != 2 || b != 2 {
		t.Errorf("thread 3 of 4 over 2: %d..%d", a, b)
	}
}
