package main

import (
	"encoding/json"
	"fmt"
)

// ProtocolVersion is the harness protocol version this harness speaks
// (docs/harness-protocol.md); requests of any other version are refused.
const ProtocolVersion = 1

// DatasetSpec names a dataset: keys 0..Keys of Scheme, values of ValueSize
// bytes derived from Seed.
type DatasetSpec struct {
	Keys      uint64 `json:"keys"`
	Scheme    string `json:"scheme"`
	ValueSize int    `json:"value_size"`
	Seed      uint64 `json:"seed"`
}

// Request is one harness request. The wire form is a flat JSON object tagged
// by "op"; MarshalJSON writes only the fields of the request's op.
type Request struct {
	Protocol uint32 `json:"protocol"`
	Op       string `json:"op"`

	// Inspect, load and read.
	Dir     string       `json:"dir"`
	Dataset *DatasetSpec `json:"dataset"`
	Config  string       `json:"config"`

	// Load and read.
	Threads int `json:"threads"`

	// Load.
	Batch uint64 `json:"batch"`

	// Read.
	CacheBytes uint64 `json:"cache_bytes"`
	WarmupFile string `json:"warmup_file"`
	ReadsFile  string `json:"reads_file"`
	DirectIO   bool   `json:"direct_io"`
}

// requiredFields lists, per op, the fields the Rust definition requires.
var requiredFields = map[string][]string{
	"info":    {},
	"inspect": {"dir", "dataset", "config"},
	"load":    {"dir", "dataset", "config", "threads", "batch"},
	"read":    {"dir", "dataset", "config", "cache_bytes", "threads", "warmup_file", "reads_file", "direct_io"},
}

// MarshalJSON encodes the request in its wire form: protocol, op and the
// fields that op requires, nothing else.
func (r Request) MarshalJSON() ([]byte, error) {
	type plain Request // without this method
	all, err := json.Marshal(plain(r))
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(all, &fields); err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{"protocol": fields["protocol"], "op": fields["op"]}
	for _, f := range requiredFields[r.Op] {
		out[f] = fields[f]
	}
	return json.Marshal(out)
}

// ParseRequest decodes and checks a request: a known op, protocol 1, and
// every field the op requires present.
func ParseRequest(data []byte) (*Request, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, fmt.Errorf("request is not a JSON object: %v", err)
	}
	var req Request
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("bad request: %v", err)
	}
	if _, ok := fields["protocol"]; !ok {
		return nil, fmt.Errorf("request has no \"protocol\"")
	}
	if req.Protocol != ProtocolVersion {
		return nil, fmt.Errorf("unsupported protocol %d (this harness speaks %d)", req.Protocol, ProtocolVersion)
	}
	required, ok := requiredFields[req.Op]
	if !ok {
		return nil, fmt.Errorf("unknown op %q (expected info, load, inspect or read)", req.Op)
	}
	for _, f := range required {
		if _, ok := fields[f]; !ok {
			return nil, fmt.Errorf("%s request has no %q", req.Op, f)
		}
	}
	if req.Dataset != nil {
		var ds map[string]json.RawMessage
		if err := json.Unmarshal(fields["dataset"], &ds); err != nil {
			return nil, fmt.Errorf("bad dataset: %v", err)
		}
		for _, f := range []string{"keys", "scheme", "value_size", "seed"} {
			if _, ok := ds[f]; !ok {
				return nil, fmt.Errorf("dataset has no %q", f)
			}
		}
		if req.Dataset.ValueSize < 0 {
			return nil, fmt.Errorf("negative value_size %d", req.Dataset.ValueSize)
		}
	}
	return &req, nil
}

// InfoReply answers "info".
type InfoReply struct {
	Engine   string   `json:"engine"`
	Version  string   `json:"version"`
	Configs  []string `json:"configs"`
	DirectIO bool     `json:"direct_io"`
}

// LevelShape is the files and bytes of one level.
type LevelShape struct {
	Level uint32 `json:"level"`
	Files uint64 `json:"files"`
	Bytes uint64 `json:"bytes"`
}

// Composition is what the tables are made of, in bytes over all tables (the
// Rust engine::Composition).
type Composition struct {
	Entries                    uint64 `json:"entries"`
	RawKeyBytes                uint64 `json:"raw_key_bytes"`
	RawValueBytes              uint64 `json:"raw_value_bytes"`
	DBBytes                    uint64 `json:"db_bytes"`
	DataBytes                  uint64 `json:"data_bytes"`
	FilterBytes                uint64 `json:"filter_bytes"`
	FilterBytesExceptLastLevel uint64 `json:"filter_bytes_except_last_level"`
	TopLevelIndexBytes         uint64 `json:"top_level_index_bytes"`
	IndexBytes                 uint64 `json:"index_bytes"`
}

// DBShape is a database's composition and levels (L0 to L6, empty included).
type DBShape struct {
	Composition Composition  `json:"composition"`
	Levels      []LevelShape `json:"levels"`
}

// LoadReply answers "load".
type LoadReply struct {
	Engine            string  `json:"engine"`
	Seconds           float64 `json:"seconds"`
	UserBytes         uint64  `json:"user_bytes"`
	TableBytesWritten uint64  `json:"table_bytes_written"`
	WALBytes          uint64  `json:"wal_bytes"`
	WriteAmp          float64 `json:"write_amp"`
	Shape             DBShape `json:"shape"`
}

// InspectReply answers "inspect".
type InspectReply struct {
	Engine string  `json:"engine"`
	Shape  DBShape `json:"shape"`
}

// KindCounts are the counters of one block kind; nil encodes as null (the
// engine cannot tell).
type KindCounts struct {
	CacheHits     *uint64 `json:"cache_hits"`
	CacheMisses   *uint64 `json:"cache_misses"`
	PhysicalReads *uint64 `json:"physical_reads"`
}

// BlockCounts are the counters per block kind.
type BlockCounts struct {
	Filter   KindCounts `json:"filter"`
	TopIndex KindCounts `json:"top_index"`
	Index    KindCounts `json:"index"`
	Data     KindCounts `json:"data"`
}

// HitMiss are the hits and misses of a cache.
type HitMiss struct {
	Hits   uint64 `json:"hits"`
	Misses uint64 `json:"misses"`
}

// Latency holds Get latency percentiles in microseconds.
type Latency struct {
	P50  float64 `json:"p50_us"`
	P99  float64 `json:"p99_us"`
	P999 float64 `json:"p999_us"`
}

// ReadReply answers "read"; every counter covers the measured Gets only.
type ReadReply struct {
	Engine          string      `json:"engine"`
	CacheBytes      uint64      `json:"cache_bytes"`
	DirectIO        bool        `json:"direct_io"`
	Gets            uint64      `json:"gets"`
	Found           uint64      `json:"found"`
	Seconds         float64     `json:"seconds"`
	Latency         Latency     `json:"latency"`
	Blocks          BlockCounts `json:"blocks"`
	TableOpenReads  *uint64     `json:"table_open_reads"`
	TableCache      *HitMiss    `json:"table_cache"`
	ReadRequests    uint64      `json:"read_requests"`
	ReadBytes       uint64      `json:"read_bytes"`
	DeviceReadBytes *uint64     `json:"device_read_bytes"`
	RSSBytes        *uint64     `json:"rss_bytes"`
}

// ErrorReply is the reply of a failed request (exit code 1).
type ErrorReply struct {
	Error string `json:"error"`
}

// u64 returns a pointer to v, for the optional counters.
func u64(v uint64) *uint64 { return &v }
