package scrape

import "github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"

// field is the normalised signal a metric family feeds.
type field uint8

const (
	fieldNone             field = iota
	fieldWaiting                // requests waiting (summed over series)
	fieldRunning                // requests running (summed over series)
	fieldKVUsage                // KV use 0..1 (mean over series)
	fieldKVUsageOld             // deprecated KV use name, used only when fieldKVUsage is absent
	fieldCacheConfig            // info metric with block size and block count labels
	fieldLoRA                   // vllm:lora_requests_info (newest series by value)
	fieldPrefixHits             // prefix-cache hits, tokens (counter)
	fieldPrefixQueries          // prefix-cache queries, tokens (counter)
	fieldPrefixHitsOld          // deprecated hits name, used only when fieldPrefixHits is absent
	fieldPrefixQueriesOld       // deprecated queries name
	fieldBlockSize              // tokens per KV block, as a gauge (trtllm)
	fieldMaxBlocks              // KV block count, as a gauge (trtllm)
	fieldMaxTotalTokens         // KV capacity in tokens (SGLang fallback)
	numFields
)

// fieldSelected marks a family of a Families replacement, whose samples selectors split among
// fields by their labels (familySet.selectors); it is never an index of the parser's sums.
const fieldSelected field = 255

// familySet maps the metric names one engine exports to the signal each feeds. Names not in the
// set are skipped without parsing.
type familySet struct {
	names map[string]field
	// blockSizeLabel and blocksLabel name the labels of the cache-config info metric.
	blockSizeLabel, blocksLabel string
	// cacheLabels lists both, for the label parser.
	cacheLabels []string
	// nameLengths is set from names at init (see mayWant).
	nameLengths uint64
	// selectors, by family name, split the samples of the families a Families replacement
	// names (those names map to fieldSelected).
	selectors map[string]*selection
}

// families are the metric names per engine (ARCHITECTURE.md, "Model-server metrics").
var families = map[datastore.Engine]*familySet{
	datastore.EngineVLLM: {
		names: map[string]field{
			"vllm:num_requests_waiting":           fieldWaiting,
			"vllm:num_requests_running":           fieldRunning,
			"vllm:kv_cache_usage_perc":            fieldKVUsage,
			"vllm:gpu_cache_usage_perc":           fieldKVUsageOld,
			"vllm:cache_config_info":              fieldCacheConfig,
			"vllm:lora_requests_info":             fieldLoRA,
			"vllm:prefix_cache_hits_total":        fieldPrefixHits,
			"vllm:prefix_cache_queries_total":     fieldPrefixQueries,
			"vllm:gpu_prefix_cache_hits_total":    fieldPrefixHitsOld,
			"vllm:gpu_prefix_cache_queries_total": fieldPrefixQueriesOld,
		},
		blockSizeLabel: "block_size",
		blocksLabel:    "num_gpu_blocks",
		cacheLabels:    []string{"block_size", "num_gpu_blocks"},
	},
	datastore.EngineSGLang: {
		names: map[string]field{
			"sglang:num_queue_reqs":       fieldWaiting,
			"sglang:num_running_reqs":     fieldRunning,
			"sglang:token_usage":          fieldKVUsage,
			"sglang:cache_config_info":    fieldCacheConfig,
			"sglang:max_total_num_tokens": fieldMaxTotalTokens,
		},
		blockSizeLabel: "page_size",
		blocksLabel:    "num_pages",
		cacheLabels:    []string{"page_size", "num_pages"},
	},
	datastore.EngineTRTLLM: {
		names: map[string]field{
			"trtllm_num_requests_waiting":      fieldWaiting,
			"trtllm_num_requests_running":      fieldRunning,
			"trtllm_kv_cache_utilization":      fieldKVUsage,
			"trtllm_kv_cache_tokens_per_block": fieldBlockSize,
			"trtllm_kv_cache_max_blocks":       fieldMaxBlocks,
		},
	},
}

// lengths is a bit set of the lengths of the wanted names (all are shorter than 64 bytes).
func (fs *familySet) lengths() uint64 {
	var bits uint64
	for name := range fs.names {
		bits |= 1 << len(name)
	}
	return bits
}

// mayWant reports whether a name of length n can be wanted; it rejects most lines without a lookup.
func (fs *familySet) mayWant(n int) bool {
	return n < 64 && fs.nameLengths&(1<<n) != 0
}

func init() {
	for _, fs := range families {
		fs.nameLengths = fs.lengths()
	}
}

// defaultCatalog is every engine's own names.
var defaultCatalog = catalog(families)
