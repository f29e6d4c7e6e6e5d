// Package kvevents follows the KV caches of the model-server pods from the events they publish,
// vLLM's KV cache events: each pod's engine sends, over ZeroMQ, a message of three frames
// [topic, sequence, payload] whose payload is a msgpack KVEventBatch [ts, events,
// data_parallel_rank], each event a tagged array with its tag first (BlockStored, BlockRemoved,
// AllBlocksCleared). The gateway binds a SUB socket that the pods' PUB sockets connect to
// (llm-d's convention; the topic kv@<pod-ip>@<model> names the pod) and keeps an Index: block
// hash → the pods holding that block, bounded in memory by an LRU over (block, pod) entries.
// The precise-prefix-cache-scorer reads the Index.
//
// Every byte on the socket is untrusted: frames and messages are bounded before they are read
// (a guard on each connection, since the ZeroMQ library would allocate whatever length a frame
// header claims), batches and events are bounded while they are decoded, unknown event tags are
// counted and skipped, a topic naming a pod that is not in the gateway's endpoint set is
// ignored, and a sequence gap (lost messages) or a sequence that goes back (the engine
// restarted) clears that pod's entries, because a lost BlockRemoved would otherwise leave
// entries that send requests to a pod that no longer holds their blocks.
package kvevents
