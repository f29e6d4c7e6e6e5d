// Package gossip spreads cluster capacity summaries between Switchyard's gateways and routers over
// hashicorp/memberlist: encrypted membership, node metadata, newest-wins summary dissemination and
// network-coordinate RTT estimates.
//
// A Node joins one pool (Config, New, Run). Gateways publish their cluster's
// switchyard.gossip.v1.CapacitySummary with Publish (or through a Publisher, which throttles);
// routers read every node's newest summary with Snapshot (age, stale flag, member state and the
// estimated RTT to the publisher), reduce it per cluster with Clusters, and learn of changes from
// Subscribe. Members lists the pool with each member's metadata.
//
// Sub-packages: prefix holds the prompt-prefix hashing contract shared by both tiers; sketch the
// Bloom filter of hot prefix blocks a summary carries; vivaldi the network coordinates; gossiptest
// runs in-process pools on loopback for tests and benchmarks.
package gossip
