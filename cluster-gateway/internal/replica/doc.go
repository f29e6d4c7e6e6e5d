// Package replica lets the active-active gateway replicas of one cluster decide as one. Replicas
// behind one Service each route only a share of the requests; alone, each would see only its own
// in-flight requests and learn only its own prefix routes, so they would overload the same pod
// and split prefix affinity. A Sharer joins the cluster's replicas in a small memberlist pool of
// their own (encrypted with its own keyring, apart from the main gossip that spans regions) and,
// every Interval, sends every peer two things as UDP packets of at most PacketBytes:
//
//   - a load report: per pod, the requests this replica has in flight, how many of them wait for
//     their first token and those ones' prompt tokens.
//     Each receiver adds the peers' last reports to its own counts (datastore.Endpoint's
//     InFlight), so its scorers and saturation filter see the load all replicas put on the pod.
//     A report older than MaxAge counts for nothing, and a peer that leaves the pool or dies is
//     forgotten at once.
//   - the prefix routes made since the last batch (base model, pod, chained block hashes), bounded
//     by MaxBatchBytes; receivers insert them into their prefix-cache index (framework.PeerPrefixes)
//     and into the recent prefixes of the capacity summary's sketch, so a prefix one replica sent to
//     a pod is found there by the others and by the routers.
//
// Only authenticated members of the pool are heard: with a keyring every packet and stream is
// sealed with AES-GCM, messages name the sender and its cluster and are dropped unless the sender
// is a live member of the same cluster, pods must be ones this replica knows, and every count and
// length is bounded (the decoder is fuzzed).
package replica
