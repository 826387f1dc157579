package main

import (
	"encoding/json"
	"fmt"
	"strings"
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

// Ops are the protocol's ops, in the order info lists them.
var Ops = []string{"info", "load", "inspect", "read", "dbbench", "ycsb"}

// DbBenchStep is one benchmark of a dbbench request: its db_bench name and
// the seed of its key generators.
type DbBenchStep struct {
	Name string `json:"name"`
	Seed uint64 `json:"seed"`
}

// YcsbSettings are a ycsb request's preset options (Settings in
// crates/shale-workload/src/protocol.rs, YcsbSettings); README.md says how they map to Pebble.
type YcsbSettings struct {
	Preset              string  `json:"preset"`
	Filters             string  `json:"filters"`
	BlockCacheBytes     uint64  `json:"block_cache_bytes"`
	PinTableMetadata    bool    `json:"pin_table_metadata"`
	MetadataWithTables  bool    `json:"metadata_with_tables"`
	WriteBufferSize     uint64  `json:"write_buffer_size"`
	TargetFileSizeBase  uint64  `json:"target_file_size_base"`
	BaseLevelBytes      *uint64 `json:"base_level_bytes,omitempty"`
	MaxBackgroundJobs   uint64  `json:"max_background_jobs"`
	CompactionRateLimit *uint64 `json:"compaction_rate_limit"`
	CompactionNice      int     `json:"compaction_nice"`
}

// requiredSettings are the settings fields a ycsb request must have.
var requiredSettings = []string{"preset", "filters", "block_cache_bytes", "pin_table_metadata",
	"write_buffer_size", "target_file_size_base", "max_background_jobs", "compaction_rate_limit"}

// Request is one harness request. The wire form is a flat JSON object tagged
// by "op"; MarshalJSON writes only the fields of the request's op.
type Request struct {
	Protocol uint32 `json:"protocol"`
	Op       string `json:"op"`

	// Every op but info.
	Dir string `json:"dir"`
	// Inspect, load and read.
	Dataset *DatasetSpec `json:"dataset"`
	// Inspect, load, read and dbbench.
	Config string `json:"config"`

	// Load, read, dbbench and ycsb.
	Threads int `json:"threads"`

	// Load.
	Batch uint64 `json:"batch"`

	// Read (cache_bytes also dbbench, direct_io also ycsb).
	CacheBytes uint64 `json:"cache_bytes"`
	WarmupFile string `json:"warmup_file"`
	ReadsFile  string `json:"reads_file"`
	DirectIO   bool   `json:"direct_io"`
	// Optional: a block-access trace file. Pebble has no block-cache
	// tracing, so this harness refuses a read request that asks for one.
	Trace string `json:"trace,omitempty"`

	// Dbbench.
	Fresh       bool          `json:"fresh"`
	Settle      bool          `json:"settle"`
	Benchmarks  []DbBenchStep `json:"benchmarks"`
	Num         uint64        `json:"num"`
	Reads       uint64        `json:"reads"`
	KeySize     int           `json:"key_size"`
	ValueSize   int           `json:"value_size"`
	OpenFiles   int64         `json:"open_files"`
	BloomBits   int64         `json:"bloom_bits"`
	Compression string        `json:"compression"`

	// Ycsb (workload, operations and direct_io in the run phase only).
	Phase       string        `json:"phase"`
	Workload    string        `json:"workload"`
	Records     uint64        `json:"records"`
	FieldCount  uint64        `json:"field_count"`
	FieldLength uint64        `json:"field_length"`
	Seed        uint64        `json:"seed"`
	Operations  uint64        `json:"operations"`
	Settings    *YcsbSettings `json:"settings"`
}

// requiredFields lists, per op, the fields the Rust definition requires.
var requiredFields = map[string][]string{
	"info":    {},
	"inspect": {"dir", "dataset", "config"},
	"load":    {"dir", "dataset", "config", "threads", "batch"},
	"read":    {"dir", "dataset", "config", "cache_bytes", "threads", "warmup_file", "reads_file", "direct_io"},
	"dbbench": {"dir", "config", "fresh", "settle", "benchmarks", "num", "reads", "key_size", "value_size",
		"threads", "cache_bytes", "open_files", "bloom_bits", "compression"},
	"ycsb": {"dir", "phase", "records", "field_count", "field_length", "seed", "threads", "settings"},
}

// ycsbRunFields are required by the ycsb op's run phase only.
var ycsbRunFields = []string{"workload", "operations", "direct_io"}

// required returns the fields r's op (and phase) requires.
func (r *Request) required() []string {
	f := requiredFields[r.Op]
	if r.Op == "ycsb" && r.Phase == "run" {
		f = append(append([]string{}, f...), ycsbRunFields...)
	}
	return f
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
	for _, f := range r.required() {
		out[f] = fields[f]
	}
	if r.Op == "read" && r.Trace != "" {
		out["trace"] = fields["trace"]
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
	if _, ok := requiredFields[req.Op]; !ok {
		return nil, fmt.Errorf("unknown op %q (the protocol's ops: %s)", req.Op, strings.Join(Ops, ", "))
	}
	if req.Op == "ycsb" && req.Phase != "load" && req.Phase != "run" {
		return nil, fmt.Errorf("unknown ycsb phase %q (expected load or run)", req.Phase)
	}
	for _, f := range req.required() {
		if _, ok := fields[f]; !ok {
			return nil, fmt.Errorf("%s request has no %q", req.Op, f)
		}
	}
	if req.Threads < 0 {
		return nil, fmt.Errorf("negative threads %d", req.Threads)
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
	switch req.Op {
	case "dbbench":
		if req.Threads < 1 {
			return nil, fmt.Errorf("dbbench needs threads of at least 1")
		}
		if req.KeySize < 1 || req.KeySize > 4096 {
			return nil, fmt.Errorf("dbbench key_size %d is not 1 to 4096", req.KeySize)
		}
		if req.ValueSize < 0 {
			return nil, fmt.Errorf("negative value_size %d", req.ValueSize)
		}
		if req.Compression != "none" && req.Compression != "default" {
			return nil, fmt.Errorf("compression %q is not none or default", req.Compression)
		}
		for i, b := range req.Benchmarks {
			if b.Name == "" {
				return nil, fmt.Errorf("benchmark %d has no name", i)
			}
		}
	case "ycsb":
		if err := checkYcsbSettings(fields["settings"], req.Settings); err != nil {
			return nil, err
		}
		if req.FieldCount == 0 || req.FieldLength == 0 {
			return nil, fmt.Errorf("field_count and field_length must be at least 1")
		}
	}
	return &req, nil
}

// checkYcsbSettings checks a ycsb request's settings: every required field,
// and the presets' filter layouts only.
func checkYcsbSettings(raw json.RawMessage, s *YcsbSettings) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || s == nil {
		return fmt.Errorf("settings must be an object")
	}
	for _, f := range requiredSettings {
		if _, ok := fields[f]; !ok {
			return fmt.Errorf("ycsb settings have no %q", f)
		}
	}
	if s.Filters != "nofilter" && s.Filters != "bloom10" {
		return fmt.Errorf("the peers run the presets' layouts only: settings.filters \"nofilter\" or \"bloom10\", not %q", s.Filters)
	}
	return nil
}

// InfoReply answers "info".
type InfoReply struct {
	Engine   string   `json:"engine"`
	Version  string   `json:"version"`
	Configs  []string `json:"configs"`
	DirectIO bool     `json:"direct_io"`
	// Ops are the ops this harness serves.
	Ops []string `json:"ops"`
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

// DbBenchResult is one benchmark's figures; nil counters encode as null
// (the engine cannot tell).
type DbBenchResult struct {
	Name             string  `json:"name"`
	Ops              uint64  `json:"ops"`
	Seconds          float64 `json:"seconds"`
	MicrosPerOp      float64 `json:"micros_per_op"`
	Found            uint64  `json:"found"`
	Bytes            uint64  `json:"bytes"`
	BlockCacheHits   *uint64 `json:"block_cache_hits"`
	BlockCacheMisses *uint64 `json:"block_cache_misses"`
	TableCacheHits   *uint64 `json:"table_cache_hits"`
	TableCacheMisses *uint64 `json:"table_cache_misses"`
}

// DbBenchReply answers "dbbench".
type DbBenchReply struct {
	Engine        string          `json:"engine"`
	Results       []DbBenchResult `json:"results"`
	SettleSeconds float64         `json:"settle_seconds"`
}

// YcsbLoadReply answers a ycsb load.
type YcsbLoadReply struct {
	Engine          string   `json:"engine"`
	Seconds         float64  `json:"seconds"`
	SettingsIgnored []string `json:"settings_ignored"`
}

// YcsbOpResult is the latency of one operation kind in a ycsb run.
type YcsbOpResult struct {
	Count     uint64  `json:"count"`
	OpsPerSec float64 `json:"ops_per_sec"`
	MeanUs    float64 `json:"mean_us"`
	P50       float64 `json:"p50_us"`
	P95       float64 `json:"p95_us"`
	P99       float64 `json:"p99_us"`
	P999      float64 `json:"p999_us"`
}

// YcsbRunReply answers a ycsb run; nil counters encode as null (the engine
// cannot tell).
type YcsbRunReply struct {
	Engine                    string                  `json:"engine"`
	Operations                uint64                  `json:"operations"`
	Seconds                   float64                 `json:"seconds"`
	OpsPerSec                 float64                 `json:"ops_per_sec"`
	Ops                       map[string]YcsbOpResult `json:"ops"`
	PendingCompactionBytesMax *uint64                 `json:"pending_compaction_bytes_max"`
	StallCount                *uint64                 `json:"stall_count"`
	StallMicros               *uint64                 `json:"stall_micros"`
	Gets                      uint64                  `json:"gets"`
	BlockReads                *uint64                 `json:"block_reads"`
	LevelLookups              []uint64                `json:"level_lookups"`
	LevelMisses               []uint64                `json:"level_misses"`
	SettingsIgnored           []string                `json:"settings_ignored"`
}

// ErrorReply is the reply of a failed request (exit code 1).
type ErrorReply struct {
	Error string `json:"error"`
}

// u64 returns a pointer to v, for the optional counters.
func u64(v uint64) *uint64 { return &v }
