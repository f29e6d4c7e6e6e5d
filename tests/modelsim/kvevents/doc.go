// Package kvevents makes modelsim publish vLLM's KV cache events, so the gateway's
// precise-prefix-cache-scorer can be exercised without a GPU: a ZeroMQ PUB connection (ZMTP 3,
// written here, dialled to the gateway's SUB socket) sends, for the simulated prefix cache,
// BlockStored, BlockRemoved and AllBlocksCleared events as vLLM encodes them — msgpack
// KVEventBatch [ts, events, data_parallel_rank] in messages of three frames [topic, sequence,
// payload] under the topic kv@<pod>@<model> — with block hashes chained as vLLM's
// sha256_cbor algorithm chains them over the prompt's token ids (BlockHashes).
//
// The package is modelsim's own, separate from the gateway's decoder on purpose: the two tiers
// of the test (publisher and subscriber) are written independently against vLLM's format, so an
// end-to-end match shows both follow it.
package kvevents
