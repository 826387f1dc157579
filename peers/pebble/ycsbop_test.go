package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"
)

type ycsbReplyFields struct {
	Load struct {
		Fields []string `json:"fields"`
	} `json:"load"`
	Run struct {
		Fields   []string `json:"fields"`
		Nullable []string `json:"nullable"`
		OpKinds  []string `json:"op_kinds"`
		OpFields []string `json:"op_fields"`
	} `json:"run"`
}

// keysOf returns the top-level field names of a JSON object, sorted.
func keysOf(t *testing.T, data []byte) (map[string]json.RawMessage, []string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return m, keys
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// The ycsb op end to end: a load of 2,000 records, every workload on it
// (counts and Gets add up, the reply fields of ycsb.reply-fields.json), a
// second load refused, runs of another layout or workload refused.
func TestYcsbOp(t *testing.T) {
	var fields ycsbReplyFields
	readFixture(t, "ycsb.reply-fields.json", &fields)
	dir := filepath.Join(t.TempDir(), "db")
	base := fmt.Sprintf(`"protocol":1,"op":"ycsb","dir":%q,"records":2000,"field_count":10,"field_length":100,
		"seed":1,"threads":2,"settings":{"preset":"readopt-512mb","filters":"bloom10","block_cache_bytes":88000,
		"pin_table_metadata":true,"metadata_with_tables":false,"write_buffer_size":262144,
		"target_file_size_base":65536,"base_level_bytes":268435456,"max_background_jobs":2,
		"compaction_rate_limit":null,"compaction_nice":0}`, dir)
	data, err := request(t, `{"phase":"load",`+base+`}`)
	if err != nil {
		t.Fatal(err)
	}
	_, keys := keysOf(t, data)
	var lr YcsbLoadReply
	json.Unmarshal(data, &lr)
	if !slices.Equal(keys, sorted(fields.Load.Fields)) || lr.Engine != "pebble v1.1.5" ||
		!slices.Equal(lr.SettingsIgnored, []string{"pin_table_metadata"}) {
		t.Errorf("load reply %s", data)
	}
	if _, err := request(t, `{"phase":"load",`+base+`}`); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Errorf("second load: %v", err)
	}
	run := func(w string, ops int, extra string) ([]byte, error) {
		return request(t, fmt.Sprintf(`{"phase":"run","workload":%q,"operations":%d,"direct_io":false,%s}`, w, ops, extra))
	}
	for _, w := range []string{"a", "b", "c", "d", "e", "f"} {
		data, err := run(w, 1000, base)
		if err != nil {
			t.Fatalf("workload %s: %v", w, err)
		}
		m, keys := keysOf(t, data)
		if !slices.Equal(keys, sorted(fields.Run.Fields)) {
			t.Errorf("workload %s: fields %v", w, keys)
		}
		for k, v := range m {
			if string(v) == "null" && !slices.Contains(fields.Run.Nullable, k) {
				t.Errorf("workload %s: %s is null", w, k)
			}
		}
		var r YcsbRunReply
		json.Unmarshal(data, &r)
		sum, wantGets := uint64(0), uint64(0)
		for kind, o := range r.Ops {
			if !slices.Contains(fields.Run.OpKinds, kind) || o.P50 > o.P99 {
				t.Errorf("workload %s: op %s %+v", w, kind, o)
			}
			sum += o.Count
			switch kind {
			case "read", "update":
				wantGets += o.Count
			case "read-modify-write":
				wantGets += 2 * o.Count
			}
		}
		if r.Operations != 1000 || sum != 1000 || r.Gets != wantGets || r.Engine != "pebble v1.1.5" ||
			r.StallCount == nil || r.PendingCompactionBytesMax == nil || r.BlockReads != nil || r.LevelLookups != nil {
			t.Errorf("workload %s: reply %s", w, data)
		}
	}
	if _, err := run("a", 10, strings.Replace(base, `"records":2000`, `"records":3000`, 1)); err == nil ||
		!strings.Contains(err.Error(), "3000 records") {
		t.Errorf("run of 3000 records: %v", err)
	}
	if _, err := run("a", 10, strings.Replace(base, `"bloom10"`, `"nofilter"`, 1)); err == nil ||
		!strings.Contains(err.Error(), "nofilter") {
		t.Errorf("run with nofilter: %v", err)
	}
	if _, err := run("g", 10, base); err == nil || !strings.Contains(err.Error(), `"g"`) {
		t.Errorf("workload g: %v", err)
	}
}

// The dbbench op end to end: a fresh fillseq twice (the second destroys the
// first), the readers on 2 threads, an unknown benchmark, a fresh run
// refused while another handle holds the lock, and the configuration.
func TestDbBenchOp(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	req := func(fresh bool, threads int, benches string) string {
		return fmt.Sprintf(`{"protocol":1,"op":"dbbench","dir":%q,"config":"geth","fresh":%t,"settle":%t,
			"benchmarks":%s,"num":2000,"reads":500,"key_size":16,"value_size":100,"threads":%d,
			"cache_bytes":1000,"open_files":0,"bloom_bits":10,"compression":"none"}`, dir, fresh, fresh, benches, threads)
	}
	fill := `[{"name":"fillseq","seed":1}]`
	for i := 0; i < 2; i++ {
		data, err := request(t, req(true, 1, fill))
		if err != nil {
			t.Fatal(err)
		}
		var r DbBenchReply
		json.Unmarshal(data, &r)
		if len(r.Results) != 1 || r.Results[0].Ops != 2000 || r.Results[0].Bytes != 2000*116 || r.SettleSeconds <= 0 {
			t.Errorf("fill reply %s", data)
		}
	}
	data, err := request(t, req(false, 2, `[{"name":"readrandom","seed":2},{"name":"readmissing","seed":3},
		{"name":"seekrandom","seed":4},{"name":"readseq","seed":5},{"name":"readhot","seed":6},{"name":"readreverse","seed":7}]`))
	if err != nil {
		t.Fatal(err)
	}
	var r DbBenchReply
	json.Unmarshal(data, &r)
	rs := r.Results
	if len(rs) != 6 || rs[0].Ops != 1000 || rs[0].Found != 1000 || rs[1].Found != 0 || rs[1].Ops != 1000 ||
		rs[2].Found != 1000 || rs[3].Ops != 1000 || rs[4].Found != 1000 || rs[5].Bytes != 1000*116 ||
		r.SettleSeconds != 0 || rs[0].BlockCacheMisses == nil || *rs[0].BlockCacheMisses == 0 || rs[0].TableCacheHits == nil {
		t.Errorf("readers reply %s", data)
	}
	if _, err := request(t, req(false, 1, `[{"name":"compact","seed":0}]`)); err == nil ||
		!strings.Contains(err.Error(), "unknown benchmark") {
		t.Errorf("unknown benchmark: %v", err)
	}
	held, err := pebble.Open(dir, &pebble.Options{ErrorIfNotExists: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := request(t, req(true, 1, fill)); err == nil || !strings.Contains(err.Error(), "lock") {
		t.Errorf("fresh run with the database open elsewhere: %v", err)
	}
	v, closer, err := held.Get([]byte("0000000000000007"))
	if err != nil || len(v) != 100 {
		t.Errorf("after the refused destroy: %v", err)
	} else {
		closer.Close()
	}
	held.Close()
	bad := strings.Replace(req(false, 1, fill), `"geth"`, `"default"`, 1)
	if _, err := request(t, bad); err == nil || !strings.Contains(err.Error(), `unknown config "default"`) {
		t.Errorf("config default: %v", err)
	}
}
