//go:build nopool

package gossip

// Built with the nopool tag, the package's pools are bypassed (every get allocates, every put
// drops), so that a benchmark run with and without the tag shows what they save
// (docs/architecture.md#pools).
func init() { pooling = false }
