// Package gossip spreads cluster capacity summaries between Switchyard's gateways and routers over
// hashicorp/memberlist: encrypted membership, node metadata, newest-wins summary dissemination and
// network-coordinate RTT estimates. The prefix sub-package holds the prompt-prefix hashing contract
// shared by both tiers.
package gossip
