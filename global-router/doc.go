// Package globalrouter is the root of the global-router module: Switchyard's Tier 2, one or more
// per region behind a regional DNS name. It learns every cluster's capacity from gossip, keeps
// requests in the caller's region while it has room, and forwards overflow to the cluster that
// will answer first. The binaries are under cmd/ and the logic under internal/.
package globalrouter
